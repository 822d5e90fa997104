"""The pure parts: certificates, settings, the warning budget and audit keys (no server needed)."""

from __future__ import annotations

import argparse
import ipaddress
import re
import ssl
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.x509.oid import ExtendedKeyUsageOID
from hypothesis import given
from hypothesis import strategies as st

from webhook.admission.budget import MAX_TOTAL, audit_key, clip, fit_audit, fit_warnings
from webhook.certs import make_ca, make_serving_cert, service_dns_names, write_dev_certs
from webhook.core.namespace import Mode
from webhook.settings import Settings, SettingsError, add_arguments, load_settings

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
            (["--port", "http"], {}, "--port"),
            ([], {"POD_TAILOR_PORT": "70000"}, "port 70000"),
            ([], {"POD_TAILOR_DEFAULT_MODE": "enforcing"}, "POD_TAILOR_DEFAULT_MODE"),
            (["--cert-file", "tls.crt"], {}, "together"),
            (["--log-level", "loud"], {}, "log_level"),
            ([], {"POD_TAILOR_CERT_RELOAD_SECONDS": "0"}, "positive"),
        ],
    )
    def test_an_unusable_value_is_refused_naming_where_it_came_from(
        self, argv: list[str], env: dict[str, str], message: str
    ) -> None:
        with pytest.raises(SettingsError, match=re.escape(message)):
            self.parse(*argv, env=env)

    def test_settings_are_frozen(self) -> None:
        with pytest.raises(AttributeError):
            Settings().port = 1  # type: ignore[misc]


class TestWarningBudget:
    def test_short_warnings_pass_unchanged_in_order(self) -> None:
        assert fit_warnings(["b", "a"]) == ("b", "a")

    def test_a_long_warning_is_clipped_below_120_characters_on_one_line(self) -> None:
        (warning,) = fit_warnings(["x" * 300 + "\nsecond line"])
        assert len(warning) == 119
        assert warning.endswith("...")
        assert "\n" not in warning

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
