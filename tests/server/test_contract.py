"""The pure parts: certificates, settings, the warning budget and audit keys (no server needed)."""

from __future__ import annotations

import argparse
import dataclasses
import ipaddress
import re
import ssl
from pathlib import Path
from typing import Any, ClassVar

import jsonpatch
import orjson
import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from hypothesis import example, given, settings
from hypothesis import strategies as st

from webhook.admission import VerdictCache, admit
from webhook.admission.budget import MAX_TOTAL, audit_key, clip, fit_audit, fit_warnings
from webhook.admission.patchcheck import PatchError, check_patch
from webhook.config.settings import Settings, SettingsError, add_arguments, load_settings
from webhook.core.engine import decide
from webhook.core.model.namespace import Mode
from webhook.server.certs import make_ca, make_serving_cert, service_dns_names, write_dev_certs

QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")


class TestCertificates:
    def test_the_serving_certificate_names_the_service_and_chains_to_the_ca(self) -> None:
        ca = make_ca()
        names = service_dns_names("pod-tailor", "pod-tailor")
        serving = make_serving_cert(ca, dns_names=names, ip_addresses=("127.0.0.1", "::1"))
        sans = serving.cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert sans.get_values_for_type(x509.DNSName) == [
            "pod-tailor", "pod-tailor.pod-tailor", "pod-tailor.pod-tailor.svc",
            "pod-tailor.pod-tailor.svc.cluster.local",
        ]
        assert sans.get_values_for_type(x509.IPAddress) == [
            ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")
        ]
        serving.cert.verify_directly_issued_by(ca.cert)
        usage = serving.cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        assert list(usage) == [ExtendedKeyUsageOID.SERVER_AUTH]

    def test_the_ca_can_sign_but_the_serving_certificate_cannot(self) -> None:
        ca = make_ca()
        serving = make_serving_cert(ca)
        assert ca.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is True
        assert serving.cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca is False

    def test_a_certificate_without_any_name_is_refused(self) -> None:
        with pytest.raises(ValueError, match="at least one"):
            make_serving_cert(make_ca(), dns_names=(), ip_addresses=())

    def test_development_files_load_into_tls_contexts_and_the_key_is_private(self, tmp_path: Path) -> None:
        ca_file, cert_file, key_file = write_dev_certs(tmp_path / "dev")
        server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        server.load_cert_chain(cert_file, key_file)
        ssl.create_default_context(cafile=str(ca_file))
        assert key_file.stat().st_mode & 0o077 == 0
        assert sorted(p.name for p in (tmp_path / "dev").iterdir()) == ["ca.crt", "tls.crt", "tls.key"]


class TestSettings:
    def parse(self, *argv: str, env: dict[str, str] | None = None) -> Settings:
        parser = argparse.ArgumentParser()
        add_arguments(parser)
        return load_settings(parser.parse_args(list(argv)), env=env or {})

    def test_nothing_given_means_the_defaults(self) -> None:
        assert self.parse() == Settings()
        assert Settings().port == 8443
        assert Settings().default_mode is Mode.ENFORCE

    def test_an_option_wins_over_the_environment_which_wins_over_the_default(self) -> None:
        env = {
            "POD_TAILOR_PORT": "9443", "POD_TAILOR_DEFAULT_MODE": "dry-run", "POD_TAILOR_LOG_LEVEL": "debug"
        }
        settings = self.parse("--port", "10443", env=env)
        assert settings.port == 10443
        assert settings.default_mode is Mode.DRY_RUN
        assert settings.log_level == "debug"

    def test_an_empty_variable_unsets_an_optional_path(self) -> None:
        assert self.parse(env={"POD_TAILOR_POLICY_FILE": ""}).policy_file is None

    @pytest.mark.parametrize(
        ("argv", "env", "message"),
        [
            ([], {"POD_TAILOR_PORT": "http"}, "POD_TAILOR_PORT: 'http' is not a whole number"),
            ([], {"POD_TAILOR_PORT": "70000"}, "POD_TAILOR_PORT: 70000 is not a port: use 1 to 65535"),
            ([], {"POD_TAILOR_DEFAULT_MODE": "enforcing"}, "POD_TAILOR_DEFAULT_MODE"),
            (["--cert-file", "tls.crt"], {}, "together"),
            ([], {"POD_TAILOR_LOG_LEVEL": "loud"}, "POD_TAILOR_LOG_LEVEL: 'loud': use debug, info, warning"),
            ([], {"POD_TAILOR_CERT_RELOAD_SECONDS": "0"}, "0 seconds: use a number of seconds above 0"),
        ],
    )
    def test_an_unusable_value_is_refused_naming_where_it_came_from(
        self, argv: list[str], env: dict[str, str], message: str
    ) -> None:
        with pytest.raises(SettingsError, match=re.escape(message)):
            self.parse(*argv, env=env)

    def test_an_unusable_option_is_refused_by_the_parser_with_the_same_rule(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit):
            self.parse("--port", "70000")
        assert "--port: 70000 is not a port: use 1 to 65535" in capsys.readouterr().err

    def test_settings_are_frozen(self) -> None:
        with pytest.raises(AttributeError):
            Settings().port = 1  # type: ignore[misc]


class TestWarningBudget:
    def test_short_warnings_pass_unchanged_in_order(self) -> None:
        assert fit_warnings(["b", "a"]) == ("b", "a")

    def test_a_long_warning_is_split_between_words_below_120_characters_each_nothing_lost(self) -> None:
        words = [f"word{i}" for i in range(60)]
        pieces = fit_warnings([" ".join(words)])
        assert len(pieces) == 4
        assert all(len(piece) < 120 for piece in pieces)
        assert all(piece.startswith("... ") for piece in pieces[1:])
        assert " ".join(piece.removeprefix("... ") for piece in pieces).split() == words

    def test_a_word_longer_than_a_line_is_clipped_and_the_rest_goes_on(self) -> None:
        first, second = fit_warnings(["x" * 300 + "\nsecond line"])
        assert len(first) == 115
        assert first.endswith("...")
        assert second == "... second line"

    def test_when_they_do_not_fit_the_first_ones_are_kept_and_the_rest_counted(self) -> None:
        warnings = [f"warning number {i:03d} " + "y" * 90 for i in range(100)]
        fitted = fit_warnings(warnings)
        assert sum(map(len, fitted)) <= MAX_TOTAL
        kept = fitted[:-1]
        assert list(kept) == [clip(w) for w in warnings[: len(kept)]]
        assert fitted[-1] == f"pod-tailor: ... and {100 - len(kept)} more not shown"

    @given(st.lists(st.text(max_size=400), max_size=80))
    def test_any_warnings_fit_the_api_servers_limits(self, warnings: list[str]) -> None:
        fitted = fit_warnings(warnings)
        assert all(0 < len(w) < 120 for w in fitted)
        assert sum(map(len, fitted)) <= MAX_TOTAL


class TestAuditAnnotations:
    @given(st.text(max_size=100))
    def test_any_key_becomes_a_valid_qualified_name_part(self, key: str) -> None:
        fixed = audit_key(key)
        assert QUALIFIED_NAME.match(fixed)
        assert len(fixed) <= 63

    def test_list_values_are_joined_and_empty_ones_dropped(self) -> None:
        assert fit_audit({"would-inject": ["a", "b"], "empty": [], "mode": "dry-run"}) == {
            "would-inject": "a; b", "mode": "dry-run"
        }


class TestPatchCheck:
    POD: ClassVar[dict[str, Any]] = {
        "metadata": {"labels": {"app": "a"}},
        "spec": {"containers": [{"name": "app", "resources": {}}]},
    }

    @pytest.mark.parametrize(
        "ops",
        [
            [{"op": "add", "path": "/spec/containers/0/resources/requests", "value": {"cpu": "1"}}],
            [
                {"op": "add", "path": "/metadata/annotations", "value": {}},
                {"op": "add", "path": "/metadata/annotations/pod-tailor.io~1injected", "value": "x"},
                {"op": "replace", "path": "/metadata/annotations/pod-tailor.io~1injected", "value": "y"},
            ],
            [{"op": "replace", "path": "/metadata/labels/app", "value": "b"}],
            [{"op": "add", "path": "/spec/containers/-", "value": {"name": "b"}}],
            [{"op": "test", "path": "/metadata/labels/app", "value": "a"}],
        ],
        ids=["add-member", "add-under-added", "replace-existing", "list-append", "test-op"],
    )
    def test_a_patch_that_applies_passes(self, ops: list[dict[str, Any]]) -> None:
        check_patch(self.POD, ops)
        jsonpatch.apply_patch(self.POD, ops)  # the check agrees with a real application

    @pytest.mark.parametrize(
        "ops",
        [
            [{"op": "add", "path": "/spec/containers/0/lifecycle/preStop", "value": {}}],
            [{"op": "replace", "path": "/metadata/annotations", "value": {}}],
            [{"op": "add", "path": "/spec/containers/3/resources", "value": {}}],
            [{"op": "add", "path": "", "value": {}}],
            [{"op": "add", "path": "spec", "value": {}}],
            [{"op": "add", "path": "/spec/containers/9", "value": {}}],
            [{"op": "test", "path": "/metadata/labels/app", "value": "z"}],
        ],
        ids=["missing-parent", "replace-missing", "no-such-container", "whole-pod", "not-a-pointer",
             "list-index-past-end", "failed-test"],
    )
    def test_a_patch_that_would_fail_to_apply_is_caught(self, ops: list[dict[str, Any]]) -> None:
        with pytest.raises(PatchError):
            check_patch(self.POD, ops)


class TestPatchCheckEdges:
    """Edges the table above and the property below may miss, each row naming the mutants of
    admission/patchcheck.py it kills. A refusal's message goes to the log line (`detail`), so it is
    asserted whole: which op, and why."""

    @pytest.mark.parametrize(
        ("pod", "ops"),
        [
            pytest.param({"metadata": {"annotations": {"a/b": "x"}}},
                         [{"op": "replace", "path": "/metadata/annotations/a~1b", "value": "y"}],
                         id="escaped-slash"),  # `~` tests inverted or never true, `~1` not unescaped
            pytest.param({"metadata": {"annotations": {"m~n": "x"}}},
                         [{"op": "replace", "path": "/metadata/annotations/m~0n", "value": "y"}],
                         id="escaped-tilde"),  # `~0` not unescaped, or to something else
            pytest.param({"metadata": {}},
                         [{"op": "add", "path": "/status", "value": {"a": {}}},
                          {"op": "add", "path": "/status/a/b", "value": 1}],
                         id="through-a-top-level-value"),  # the added values looked up from depth 2 or by -2
            pytest.param({"metadata": {"name": "p"}},
                         [{"op": "add", "path": "/metadata/annotations", "value": {}},
                          {"op": "add", "path": "/metadata/annotations/a", "value": {}},
                          {"op": "replace", "path": "/metadata/name", "value": "q"},
                          {"op": "add", "path": "/metadata/annotations/a/b", "value": "1"}],
                         id="a-replace-forgets-only-what-was-added-below-it"),  # `or` for `and`
        ],
    )
    def test_a_patch_that_applies_passes(self, pod: dict[str, Any], ops: list[dict[str, Any]]) -> None:
        check_patch(pod, ops)
        jsonpatch.apply_patch(pod, ops)

    @pytest.mark.parametrize(
        ("ops", "message"),
        [
            pytest.param([{"op": "add", "path": "/spec/containers/1/resources", "value": {}}],
                         "/spec/containers/1/resources: the parent does not exist",
                         id="index-just-past-the-end"),  # `<=` for `<`: an IndexError, not a refusal
            pytest.param([{"op": "add", "path": "metadata/x", "value": 1}],
                         "not a JSON pointer: 'metadata/x'", id="relative-pointer"),  # `and` for `or`
            pytest.param([{"op": "add", "path": None, "value": 1}],
                         "not a JSON pointer: None", id="no-pointer"),  # `and` for `or`, message None
            pytest.param([{"op": "add", "path": "", "value": {}}],
                         "the patch replaces the whole Pod", id="whole-pod"),  # message changed
            pytest.param([{"op": "add", "path": "/spec/x/y", "value": 1}],
                         "/spec/x/y: the parent does not exist", id="missing-parent"),  # message None
            pytest.param([{"op": "replace", "path": "/metadata/name", "value": "q"}],
                         "/metadata/name: replace of a member that does not exist",
                         id="replace-missing"),  # message None; "replace" misspelt (sent to jsonpatch)
        ],
    )
    def test_a_refusal_says_which_op_and_why(self, ops: list[dict[str, Any]], message: str) -> None:
        pod = {"metadata": {}, "spec": {"containers": [{"name": "app"}]}}
        with pytest.raises(PatchError) as refused:
            check_patch(pod, ops)
        assert str(refused.value) == message

    def test_a_refusal_by_jsonpatch_carries_its_message(self) -> None:
        """Kills: the message of the full application's exception dropped (`None`, `str(None)`)."""
        pod = {"metadata": {"labels": {"app": "a"}}}
        ops = [{"op": "test", "path": "/metadata/labels/app", "value": "z"}]
        with pytest.raises(jsonpatch.JsonPatchException) as real:
            jsonpatch.apply_patch(pod, ops)
        with pytest.raises(PatchError) as refused:
            check_patch(pod, ops)
        assert str(refused.value) == str(real.value) != "None"


# Small documents and op sequences for the differential property below: member names that need
# escaping, list indices in and past range, pointers through values earlier ops added.
_TOKENS = st.sampled_from(["a", "b", "a/b", "m~n", "0", "1", "-"])
_VALUES = st.recursive(
    st.integers(0, 3) | st.just("v"),
    lambda inner: st.dictionaries(_TOKENS, inner, max_size=3) | st.lists(inner, max_size=3),
    max_leaves=6,
)


def _pointer(tokens: list[str]) -> str:
    return "".join("/" + token.replace("~", "~0").replace("/", "~1") for token in tokens)


_OPS = st.lists(
    st.fixed_dictionaries(
        {"op": st.sampled_from(["add", "add", "replace", "replace", "remove", "test"]),
         "path": st.lists(_TOKENS, min_size=1, max_size=3).map(_pointer), "value": _VALUES},
    ),
    min_size=1, max_size=6,
)


def _applies(document: Any, ops: list[dict[str, Any]]) -> bool:
    try:
        jsonpatch.apply_patch(orjson.loads(orjson.dumps(document)), ops)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException):
        return False
    return True


class TestPatchCheckAgreesWithJsonpatch:
    @settings(max_examples=600, deadline=None, derandomize=True)
    @given(document=st.dictionaries(_TOKENS, _VALUES, max_size=4), ops=_OPS)
    @example(document={"a": {}}, ops=[{"op": "add", "path": "/a/b", "value": 1},
                                      {"op": "add", "path": "/a", "value": {}},
                                      {"op": "replace", "path": "/a/b", "value": 2}])
    def test_the_check_refuses_exactly_the_patches_jsonpatch_cannot_apply(
        self, document: dict[str, Any], ops: list[dict[str, Any]]
    ) -> None:
        """The pointer walk (`check_patch` for add/replace) judges as the real application does.

        Kills the mutants of patchcheck.py that a table of hand-picked patches let live: escaping
        (`~0`, `~1`), list bounds (`<` for `<=`), which earlier op's value a pointer goes through, the
        replace-of-a-missing-member rule, and the shared-parent memo. Its first find, the example: a
        value an op added below a member a later op replaced was still taken as there.
        """
        try:
            check_patch(document, ops)
        except PatchError:
            refused = True
        else:
            refused = False
        assert refused is not _applies(document, ops), (document, ops)

class TestVerdictCache:
    """Replicas of one template are decided once, and never from an old snapshot."""

    @staticmethod
    def body(uid: str, *, namespace: str = "shop", dry_run: bool = False) -> bytes:
        from tests.reviews import review_for

        return orjson.dumps(review_for(namespace=namespace, uid=uid, dry_run=dry_run))

    def test_a_replica_gets_the_same_patch_under_its_own_uid_without_deciding_again(self) -> None:
        from tests.server.conftest import labelled_state

        state, cache = labelled_state(), VerdictCache(8)
        first = admit(self.body("one"), cluster=state.cluster, profiles=state.profiles, engine=decide,
                      cache=cache)
        second = admit(self.body("two", dry_run=True), cluster=state.cluster, profiles=state.profiles,
                       engine=decide, cache=cache)
        assert (cache.misses, cache.hits) == (1, 1)
        one, two = orjson.loads(first.body)["response"], orjson.loads(second.body)["response"]
        assert (one["uid"], two["uid"]) == ("one", "two")
        assert one["patch"] == two["patch"]
        assert (first.applied, second.applied) == (True, False)

    def test_replicas_differing_only_in_their_service_account_volume_share_one_verdict(self) -> None:
        from tests.reviews import review_for
        from tests.server.conftest import labelled_state

        state, cache = labelled_state(), VerdictCache(8)
        answers = []
        for uid, suffix in (("one", "x7k2p"), ("two", "q9m4z")):
            review = review_for(namespace="shop", uid=uid)
            spec = review["request"]["object"]["spec"]
            spec["volumes"] = [{"name": f"kube-api-access-{suffix}", "projected": {"sources": []}}]
            for body in spec["containers"]:
                body["volumeMounts"] = [{"name": f"kube-api-access-{suffix}", "mountPath": "/run/secrets"}]
            answers.append(admit(orjson.dumps(review), cluster=state.cluster, profiles=state.profiles,
                                 engine=decide, cache=cache))
        changed = review_for(namespace="shop", uid="three")
        changed["request"]["object"]["spec"]["containers"][0]["ports"] = [{"containerPort": 9999}]
        third = admit(orjson.dumps(changed), cluster=state.cluster, profiles=state.profiles, engine=decide,
                      cache=cache)
        assert (cache.misses, cache.hits) == (2, 1)
        patches = [orjson.loads(answer.body)["response"]["patch"] for answer in (*answers, third)]
        assert patches[0] == patches[1] != patches[2]

    def test_a_swapped_snapshot_is_never_answered_from_the_cache(self) -> None:
        from tests.server.conftest import labelled_state

        state, cache = labelled_state(), VerdictCache(8)
        patched = admit(self.body("one"), cluster=state.cluster, profiles=state.profiles, engine=decide,
                        cache=cache)
        labels = {**state.cluster.namespaces, "shop": {"pod-tailor.io/mode": "dry-run"}}  # type: ignore[dict-item]
        state.swap_cluster(dataclasses.replace(state.cluster, namespaces=labels))
        after = admit(self.body("two"), cluster=state.cluster, profiles=state.profiles, engine=decide,
                      cache=cache)
        assert (patched.outcome.value, after.outcome.value) == ("patched", "dry-run")
        assert cache.hits == 0

    def test_the_oldest_entry_goes_first_when_full(self) -> None:
        from tests.server.conftest import labelled_state

        state, cache = labelled_state(), VerdictCache(2)
        for namespace in ("a", "b", "c", "a"):
            admit(self.body("x", namespace=namespace), cluster=state.cluster, profiles=state.profiles,
                  engine=decide, cache=cache)
        assert (cache.misses, cache.hits) == (4, 0)

    def test_a_malformed_pod_is_refused_even_after_a_good_one(self) -> None:
        from tests.reviews import review_for
        from tests.server.conftest import labelled_state

        state, cache = labelled_state(), VerdictCache(8)
        admit(self.body("one"), cluster=state.cluster, profiles=state.profiles, engine=decide, cache=cache)
        broken = review_for(namespace="shop", uid="two")
        broken["request"]["object"]["metadata"]["labels"] = {"app": 1}
        answer = admit(orjson.dumps(broken), cluster=state.cluster, profiles=state.profiles, engine=decide,
                       cache=cache)
        assert answer.status == 400


class TestMessages:
    def test_a_huge_value_in_a_bad_request_is_clipped_in_the_message(self) -> None:
        from webhook.admission import BadRequest, parse_review

        problem = parse_review(orjson.dumps({"kind": "x" * 100_000, "apiVersion": "v1", "request": {}}))
        assert isinstance(problem, BadRequest)
        assert len(problem.message) < 200
