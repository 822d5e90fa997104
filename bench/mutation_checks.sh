#!/usr/bin/env bash
# Each guard test fails against the mutation its docstring names: the tracked files are copied to a
# scratch directory (with ../shared linked beside it), one `sed` is applied to one file there, and the
# named tests run against the copy with this checkout's .venv. "killed" when they fail; "SURVIVED" when
# they pass (the guard guards nothing); "NOT APPLIED" when the sed changed nothing (the code moved on:
# update the row). Never touches this checkout.
#
#     bash bench/mutation_checks.sh              # every row (~10 min on two shared cores)
#     bash bench/mutation_checks.sh qos- cache   # rows whose name starts with one of these
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=$ROOT/.venv/bin/python
WORK=${MUTATION_CHECKS_DIR:-${TMPDIR:-/tmp}/pod-tailor-mutation-checks}
REPO=$WORK/repo

# name | file | sed expression (no '|': \x7c) | pytest arguments (the guard tests)
ROWS=$(cat <<'EOF'
qos-gt-for-ne|webhook/core/model/qos.py|s/counted_requests.get(name) != counted_limits\[name\]/counted_requests.get(name) > counted_limits[name]/|tests/engine/test_safer_decisions.py -k below
qos-ge-for-gt|webhook/core/model/qos.py|s/if value > 0}/if value >= 0}/|tests/engine/test_safer_decisions.py -k zero
qos-zero-request-read-as-missing|webhook/core/model/qos.py|s/_positive(limits . requests)/limits \x7c _positive(requests)/|tests/engine/test_safer_decisions.py -k explicit
qos-gt-one-for-gt-zero|webhook/core/model/qos.py|s/if value > 0}/if value > 1}/|tests/engine/test_qos_class.py -k half
qos-any-value-without-limits|webhook/core/model/qos.py|s/ or bool(counted_limits)//|tests/engine/test_qos_class.py -k zeros
qos-break-on-unreadable|webhook/core/model/qos.py|/except QuantityError:/{n;s/continue/break/}|tests/engine/test_qos_class.py -k unreadable
qos-pod-level-and-for-or|webhook/core/model/qos.py|s/get("requests"))) or _positive/get("requests"))) and _positive/|tests/engine/test_qos_class.py -k pod_level
qos-injection-or-for-and|webhook/core/model/qos.py|s/"limits") and name in _COUNTED/"limits") or name in _COUNTED/|tests/engine/test_qos_class.py -k injections
cache-key-without-profiles|webhook/admission/cache.py|s/ or profiles is not self._profiles//|tests/server/test_https.py::TestTheVerdictCacheThroughTheServer
cache-counts-twice|webhook/admission/cache.py|s/self.hits += 1/self.hits += 2/|tests/server/test_verdict_cache.py::TestCounting
cache-entry-limit-ge|webhook/admission/cache.py|s/len(inputs) > MAX_ENTRY_INPUTS/len(inputs) >= MAX_ENTRY_INPUTS/|tests/server/test_verdict_cache.py::TestWhatIsKept
cache-evicts-at-exact-fill|webhook/admission/cache.py|s/self.bytes + cost > self.max_bytes/self.bytes + cost >= self.max_bytes/|tests/server/test_verdict_cache.py::TestWhatIsKept
cache-replaced-entry-bytes-kept|webhook/admission/cache.py|s/self.bytes -= previous\[1\]/self.bytes += previous[1]/|tests/server/test_verdict_cache.py::TestBytes
cache-profiles-and-for-or|webhook/admission/cache.py|s/self._cluster or profiles/self._cluster and profiles/|tests/server/test_verdict_cache.py::TestSnapshots
cache-replaced-not-taken-out|webhook/admission/cache.py|s/previous = self._entries.pop(key, None)/previous = None/|tests/server/test_verdict_cache.py::TestBytes
cache-replaced-popped-by-none|webhook/admission/cache.py|s/previous = self._entries.pop(key, None)/previous = self._entries.pop(None, None)/|tests/server/test_verdict_cache.py::TestBytes
cache-replaced-bytes-set|webhook/admission/cache.py|s/self.bytes -= previous\[1\]/self.bytes = previous[1]/|tests/server/test_verdict_cache.py::TestBytes
cache-evicted-bytes-set|webhook/admission/cache.py|s/self.bytes -= freed/self.bytes = freed/|tests/server/test_verdict_cache.py::TestBytes
cache-oversized-put-set|webhook/admission/cache.py|/if cost > self.max_bytes:/{n;s/self.oversized += 1/self.oversized = 1/}|tests/server/test_verdict_cache.py::TestWhatIsKept
cache-oversized-key-set|webhook/admission/cache.py|/if len(inputs) > MAX_ENTRY_INPUTS:/{n;s/self.oversized += 1/self.oversized = 1/}|tests/server/test_verdict_cache.py::TestWhatIsKept
patchcheck-index-le|webhook/admission/patchcheck.py|s/int(token) < len(node)/int(token) <= len(node)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-pointer-and-for-or|webhook/admission/patchcheck.py|s/not isinstance(pointer, str) or (pointer/not isinstance(pointer, str) and (pointer/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-pointer-message-dropped|webhook/admission/patchcheck.py|s/raise PatchError(f"not a JSON pointer: {pointer!r}")/raise PatchError(None)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-tilde-never-unescaped|webhook/admission/patchcheck.py|s/if "~" not in pointer:/if "XX~XX" not in pointer:/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-tilde-test-inverted|webhook/admission/patchcheck.py|s/if "~" not in pointer:/if "~" in pointer:/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-tilde1-kept|webhook/admission/patchcheck.py|s/replace("~1", "\/")/replace("XX~1XX", "\/")/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-tilde1-to-other|webhook/admission/patchcheck.py|s/replace("~1", "\/")/replace("~1", "XX\/XX")/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-tilde0-kept|webhook/admission/patchcheck.py|s/replace("~0", "~")/replace("XX~0XX", "~")/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-tilde0-to-other|webhook/admission/patchcheck.py|s/replace("~0", "~")/replace("~0", "XX~XX")/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-added-from-depth-2|webhook/admission/patchcheck.py|s/range(len(tokens), 0, -1)/range(len(tokens), 1, -1)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-added-by-twos|webhook/admission/patchcheck.py|s/range(len(tokens), 0, -1)/range(len(tokens), 0, -2)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-forget-unrelated|webhook/admission/patchcheck.py|s/len(path) > depth and path/len(path) > depth or path/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-whole-pod-message|webhook/admission/patchcheck.py|s/the patch replaces the whole Pod"/the patch replaces the whole pod"/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-parent-message-dropped|webhook/admission/patchcheck.py|s/raise PatchError(f"{op\[.path.\]}: the parent does not exist")/raise PatchError(None)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-replace-message-dropped|webhook/admission/patchcheck.py|s/raise PatchError(f"{op\[.path.\]}: replace of a member that does not exist")/raise PatchError(None)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-replace-misspelt|webhook/admission/patchcheck.py|s/("add", "replace")/("add", "REPLACE")/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-jsonpatch-message-dropped|webhook/admission/patchcheck.py|s/raise PatchError(str(exc))/raise PatchError(None)/|tests/server/test_contract.py::TestPatchCheckEdges
patchcheck-jsonpatch-message-none|webhook/admission/patchcheck.py|s/raise PatchError(str(exc))/raise PatchError(str(None))/|tests/server/test_contract.py::TestPatchCheckEdges
shutdown-native-sleep-unread|webhook/core/serving/shutdown.py|s/sleep = pre_stop.get("sleep")/sleep = pre_stop.get("SLEEP")/|tests/engine/test_probes_and_shutdown.py::TestExistingSleep
shutdown-exec-type-ignored|webhook/core/serving/shutdown.py|s/if isinstance(pre_stop.get("exec"), dict) else None/if isinstance(pre_stop.get("exec"), dict) or True else None/|tests/engine/test_probes_and_shutdown.py::TestExistingSleep
shutdown-command-or-for-and|webhook/core/serving/shutdown.py|s/if isinstance(command, list) and command:/if isinstance(command, list) or command:/|tests/engine/test_probes_and_shutdown.py::TestExistingSleep
shutdown-command-joined-wrong|webhook/core/serving/shutdown.py|s/words = " ".join/words = "XX XX".join/|tests/engine/test_probes_and_shutdown.py::TestExistingSleep
shutdown-word-or-for-and|webhook/core/serving/shutdown.py|s/if word.endswith("sleep") and words/if word.endswith("sleep") or words/|tests/engine/test_probes_and_shutdown.py::TestExistingSleep
shutdown-personal-gt-for-ge|webhook/core/serving/shutdown.py|s/if personal >= needed:/if personal > needed:/|tests/engine/test_probes_and_shutdown.py::TestGracePeriod
shutdown-default-lt-for-le|webhook/core/serving/shutdown.py|s/if needed <= DEFAULT_GRACE:/if needed < DEFAULT_GRACE:/|tests/engine/test_probes_and_shutdown.py::TestGracePeriod
shutdown-grace-target-none|webhook/core/serving/shutdown.py|s/^        POD_TARGET,/        None,/|tests/engine/test_probes_and_shutdown.py::TestGracePeriod
shutdown-zero-sleep-written|webhook/core/serving/shutdown.py|s/s + " if longest_sleep else "")/s + " if (longest_sleep) or True else "")/|tests/engine/test_probes_and_shutdown.py::TestGracePeriod
probes-reused-kind-none|webhook/core/serving/probes.py|s/kind = next(iter(handler))/kind = None/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-serving-port-text|webhook/core/serving/probes.py|s/else "serving port"/else "XXserving portXX"/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-undeclared-served-port|webhook/core/serving/probes.py|s/if port is None and served is not None:/if port is None and served is None:/|tests/rules/test_serving_containers.py::test_an_undeclared_served_port_is_probed_where_the_service_sends
probes-targeted-ignored|webhook/core/serving/probes.py|s/port = serving_port(ref.body, targeted)/port = serving_port(ref.body, None)/|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-served-or-for-and|webhook/core/serving/probes.py|s/if port is None and served is not None:/if port is None or served is not None:/|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-served-port-misspelt|webhook/core/serving/probes.py|s/port = {"containerPort": served}/port = {"containerport": served}/|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-to-service-and-for-or|webhook/core/serving/probes.py|s/number in targeted or port.get("name") in targeted/number in targeted and port.get("name") in targeted/|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-to-service-name-misread|webhook/core/serving/probes.py|s/port.get("name") in targeted/port.get("NAME") in targeted/|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-to-service-text|webhook/core/serving/probes.py|s/"the port the Service sends to" if/"the port the service sends to" if/|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-injection-target-none|webhook/core/serving/probes.py|/^            Injection($/{n;s/ref.name,/None,/}|tests/engine/test_probes_and_shutdown.py::TestWhichPortIsProbed
probes-annotation-source-text|webhook/core/serving/probes.py|s/"path from pod annotation" if/"PATH FROM POD ANNOTATION" if/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-annotation-source-or-true|webhook/core/serving/probes.py|s/if path_annotation else f/if path_annotation or True else f/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-path-source-dropped|webhook/core/serving/probes.py|s/path=path, path_source=path_source,/path=path, path_source=None,/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-passed-over-own-port|webhook/core/serving/probes.py|s/other.get("containerPort") != number/other.get(None) != number/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-passed-over-http-misspelt|webhook/core/serving/probes.py|s/if passed_over and reads.startswith(("tcp", "http"))/if passed_over and reads.startswith(("tcp", "HTTP"))/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-passed-over-replaces-why|webhook/core/serving/probes.py|s/why += f" (not/why = f" (not/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-passed-over-four|webhook/core/serving/probes.py|s/passed_over\[:3\]/passed_over[:4]/|tests/engine/test_probes_and_shutdown.py::TestHowAProbeIsExplained
probes-startup-times-period|webhook/core/serving/probes.py|s/2 \* rec.startup_seconds \/ shape.period_seconds/2 * rec.startup_seconds * shape.period_seconds/|tests/engine/test_probes_and_shutdown.py::TestTheStartUpBudget
probes-startup-three-times|webhook/core/serving/probes.py|s/2 \* rec.startup_seconds \/ shape/3 * rec.startup_seconds \/ shape/|tests/engine/test_probes_and_shutdown.py::TestTheStartUpBudget
probes-startup-ge|webhook/core/serving/probes.py|s/if needed > shape.failure_threshold:/if needed >= shape.failure_threshold:/|tests/engine/test_probes_and_shutdown.py::TestTheStartUpBudget
probes-startup-note-none|webhook/core/serving/probes.py|s/budget_note = f"; budget 2 x/budget_note = None and f"; budget 2 x/|tests/engine/test_probes_and_shutdown.py::TestTheStartUpBudget
shutdown-person-type-or-for-and|webhook/core/serving/shutdown.py|s/if isinstance(current, bool) or not/if isinstance(current, bool) and not/|tests/engine/test_probes_and_shutdown.py::TestWhoseGracePeriodItIs
shutdown-os-name-misread|webhook/core/serving/shutdown.py|s/.get("name") if isinstance/.get("NAME") if isinstance/|tests/engine/test_probes_and_shutdown.py::TestWhichPodsRunOnWindows
shutdown-os-type-or-true|webhook/core/serving/shutdown.py|s/if isinstance(spec.get("os"), dict) else None/if isinstance(spec.get("os"), dict) or True else None/|tests/engine/test_probes_and_shutdown.py::TestWhichPodsRunOnWindows
shutdown-os-windows-misspelt|webhook/core/serving/shutdown.py|s/return os_name == "windows" or/return os_name == "WINDOWS" or/|tests/engine/test_probes_and_shutdown.py::TestWhichPodsRunOnWindows
shutdown-no-sleep-one-second|webhook/core/serving/shutdown.py|s/return None, 0, /return None, 1, /|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_no_sleep_is_zero_seconds_slept_with_the_reason
shutdown-windows-or-true|webhook/core/serving/shutdown.py|s/"Windows node" if windows else/"Windows node" if windows or True else/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_no_sleep_is_zero_seconds_slept_with_the_reason
shutdown-fit-three-times|webhook/core/serving/shutdown.py|s/seconds \* 2 > grace/seconds * 3 > grace/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_a_persons_grace_period_keeps_the_sleep_to_half_of_it
shutdown-fit-ge|webhook/core/serving/shutdown.py|s/seconds \* 2 > grace/seconds * 2 >= grace/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_a_persons_grace_period_keeps_the_sleep_to_half_of_it
shutdown-fit-grace-le-2|webhook/core/serving/shutdown.py|s/if grace < 2:/if grace <= 2:/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_a_persons_grace_period_keeps_the_sleep_to_half_of_it
shutdown-path-invented|webhook/core/serving/shutdown.py|s/(policy.pre_stop_seconds, "")/(policy.pre_stop_seconds, "XXXX")/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_the_sleep_says_how_it_sleeps_on_which_cluster_under_which_policy
shutdown-fitted-none|webhook/core/serving/shutdown.py|s/fitted = ""/fitted = None/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_the_sleep_says_how_it_sleeps_on_which_cluster_under_which_policy
shutdown-unknown-version-text-none|webhook/core/serving/shutdown.py|s/version = f"cluster version unknown, so/version = None and f"cluster version unknown, so/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_the_sleep_says_how_it_sleeps_on_which_cluster_under_which_policy
shutdown-exec-text|webhook/core/serving/shutdown.py|s/how = "exec \/bin\/sleep/how = "EXEC \/bin\/sleep/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_the_sleep_says_how_it_sleeps_on_which_cluster_under_which_policy
shutdown-pre-stop-target-none|webhook/core/serving/shutdown.py|s/return Injection(ref.name, "preStop"/return Injection(None, "preStop"/|tests/engine/test_probes_and_shutdown.py::TestWhatAPreStopSleepSays::test_the_sleep_says_how_it_sleeps_on_which_cluster_under_which_policy
resources-policy-min-le|webhook/core/sizing/resources.py|/^def _bounded_request/,/^def _bounded_limit/s/if value < rules.min:/if value <= rules.min:/|tests/engine/test_resources.py::TestHowABoundedRequestIsExplained
resources-policy-max-ge|webhook/core/sizing/resources.py|/^def _bounded_request/,/^def _bounded_limit/s/elif value > rules.max:/elif value >= rules.max:/|tests/engine/test_resources.py::TestHowABoundedRequestIsExplained
resources-limitrange-min-le|webhook/core/sizing/resources.py|/^def _bounded_request/,/^def _bounded_limit/s/value < bounds.min:/value <= bounds.min:/|tests/engine/test_resources.py::TestHowABoundedRequestIsExplained
resources-limitrange-max-ge|webhook/core/sizing/resources.py|/^def _bounded_request/,/^def _bounded_limit/s/value > bounds.max:/value >= bounds.max:/|tests/engine/test_resources.py::TestHowABoundedRequestIsExplained
resources-policy-min-note|webhook/core/sizing/resources.py|s/"; raised to policy min"/"; RAISED TO POLICY MIN"/|tests/engine/test_resources.py::TestHowABoundedRequestIsExplained
resources-limitrange-max-note|webhook/core/sizing/resources.py|s/"; lowered to LimitRange max"/"; lowered to limitrange max"/|tests/engine/test_resources.py::TestHowABoundedRequestIsExplained
resources-oom-kills-unsaid|webhook/core/sizing/resources.py|s/if ev.oom_kills else "")/if (ev.oom_kills) and False else "")/|tests/engine/test_resources.py::TestProfiles::test_oom_kills_in_the_window_are_named_in_the_memory_source
resources-startup-peak-ge|webhook/core/sizing/resources.py|s/and rec.startup_cpu > value/and rec.startup_cpu >= value/|tests/engine/test_resources.py::TestProfiles::test_a_start_up_peak_equal_to_the_derived_limit_leaves_the_ratio_as_the_explanation
resources-limit-rounded-down|webhook/core/sizing/resources.py|s/value = _round(resource, value, up=True)/value = _round(resource, value, up=False)/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained
resources-limit-max-ge|webhook/core/sizing/resources.py|/^def _bounded_limit/,$s/if bounds.max is not None and value > bounds.max:/if bounds.max is not None and value >= bounds.max:/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained
resources-limit-ratio-ge|webhook/core/sizing/resources.py|s/and value > request \* bounds.max_ratio:/and value >= request * bounds.max_ratio:/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained
resources-limit-ratio-divided|webhook/core/sizing/resources.py|s/and value > request \* bounds.max_ratio:/and value > request \/ bounds.max_ratio:/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained
resources-limit-min-le|webhook/core/sizing/resources.py|/^def _bounded_limit/,$s/if bounds.min is not None and value < bounds.min:/if bounds.min is not None and value <= bounds.min:/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained
resources-limit-min-dropped|webhook/core/sizing/resources.py|/^def _bounded_limit/,$s/value, note = bounds.min, f"{note}; raised to LimitRange min"/value, note = None/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained
resources-ratio-rounded-up|webhook/core/sizing/resources.py|s/_round(resource, request \* bounds.max_ratio, up=False)/_round(resource, request * bounds.max_ratio, up=True)/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained -k rounded_down
resources-round-always-up|webhook/core/sizing/resources.py|s/rounding=ROUND_CEILING if up else ROUND_FLOOR/rounding=ROUND_CEILING if (up) or True else ROUND_FLOOR/|tests/engine/test_resources.py::TestHowABoundedLimitIsExplained -k rounded_down
resources-outside-min-le|webhook/core/sizing/resources.py|/^def _outside/,/^def _need/s/if value < rules.min:/if value <= rules.min:/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-outside-max-ge|webhook/core/sizing/resources.py|/^def _outside/,/^def _need/s/if value > rules.max:/if value >= rules.max:/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-outside-min-as-bytes|webhook/core/sizing/resources.py|s/is below the policy min {render(resource, rules.min)}/is below the policy min {render(None, rules.min)}/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-outside-max-unrendered|webhook/core/sizing/resources.py|s/is above the policy max {render(resource, rules.max)}/is above the policy max {render(resource, None)}/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-outside-always|webhook/core/sizing/resources.py|/^def _outside/,/^def _need/s/    return ""/    return "XXXX"/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-persons-or-for-and|webhook/core/sizing/resources.py|s/persons = request is not None and (ref.name/persons = request is not None or (ref.name/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-persons-none|webhook/core/sizing/resources.py|s/persons = request is not None and .*$/persons = None/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-unreadable-break|webhook/core/sizing/resources.py|/unreadable; left alone"/{n;n;s/continue/break/}|tests/engine/test_resources.py::TestUnreadableValues
resources-unparsable-quoted-61|webhook/core/sizing/resources.py|s/return None, str(section\[resource\])\[:60\]$/return None, str(section[resource])[:61]/|tests/engine/test_resources.py::TestUnreadableValues
resources-negative-quoted-61|webhook/core/sizing/resources.py|s/else (None, str(section\[resource\])\[:60\])/else (None, str(section[resource])[:61])/|tests/engine/test_resources.py::TestUnreadableValues
resources-need-cpu-unread|webhook/core/sizing/resources.py|s/if rec is None or resource not in ("cpu", "memory"):/if rec is None or resource not in ("CPU", "memory"):/|tests/autoscalers/test_rule.py -k set_only_at_or_above
resources-need-memory-for-cpu|webhook/core/sizing/resources.py|s/return rec.cpu if resource == "cpu" else rec.memory/return rec.cpu if (resource == "cpu") and False else rec.memory/|tests/autoscalers/test_rule.py -k set_only_at_or_above
resources-need-and-for-or|webhook/core/sizing/resources.py|s/if rec is None or resource not in ("cpu", "memory"):/if rec is None and resource not in ("cpu", "memory"):/|tests/autoscalers/test_rule.py -k set_only_at_or_above
resources-held-basis-dropped|webhook/core/sizing/resources.py|s/False, held=True)/False, held=False)/|tests/autoscalers/test_rule.py -k rests_on
resources-startup-basis-lost|webhook/core/sizing/resources.py|s/if limit_note.startswith(_STARTUP_PEAK)/if limit_note.startswith("XX")/|tests/autoscalers/test_rule.py -k rests_on
resources-request-limitrange-basis|webhook/core/sizing/resources.py|s/Basis.LIMIT_RANGE if _LIMIT_RANGE in request_note else basis/basis/|tests/engine/test_resources.py::TestWhatEachValueRestsOn
resources-limit-limitrange-basis|webhook/core/sizing/resources.py|s/if _LIMIT_RANGE in limit_note/if "XX" in limit_note/|tests/engine/test_resources.py::TestWhatEachValueRestsOn
resources-history-basis-for-policy|webhook/core/sizing/resources.py|s/else Basis.HISTORY if candidate.from_profile else Basis.POLICY/else Basis.POLICY/|tests/engine/test_resources.py::TestWhatEachValueRestsOn
resources-held-note-in-bytes|webhook/core/sizing/resources.py|s/f"{steady.note(resource)}; {source}"/f"{steady.note(None)}; {source}"/|tests/autoscalers/test_steady.py -k held_cpu
resources-need-le|webhook/core/sizing/resources.py|s/if need is not None and new_limit < need:/if need is not None and new_limit <= need:/|tests/autoscalers/test_rule.py -k set_only_at_or_above
resources-outside-max-as-bytes|webhook/core/sizing/resources.py|s/is above the policy max {render(resource, rules.max)}/is above the policy max {render(None, rules.max)}/|tests/engine/test_resources.py::TestAPersonsRequestOutsideThePolicy
resources-evidence-cpu-unread|webhook/core/sizing/resources.py|s/is not None and resource in ("cpu", "memory")$/is not None and resource in ("CPU", "memory")/|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
resources-history-note-dropped|webhook/core/sizing/resources.py|s/if new_limit is not None and limit_base > new_request:/if new_limit is None and limit_base > new_request:/|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
resources-history-note-replaces|webhook/core/sizing/resources.py|s/limit_note += f"; from history/limit_note = f"; from history/|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
resources-neither-ours-break|webhook/core/sizing/resources.py|/if not request_is_ours and not limit_is_ours:/{n;s/continue/break/}|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
resources-replaced-limit-caps|webhook/core/sizing/resources.py|s/fixed_limit = None if limit_is_ours else limit/fixed_limit = None if (limit_is_ours) and False else limit/|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
resources-cap-ge|webhook/core/sizing/resources.py|s/and new_request > fixed_limit:/and new_request >= fixed_limit:/|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
resources-unchanged-request-written|webhook/core/sizing/resources.py|s/if new_request != old_request:/if new_request == new_request:/|tests/engine/test_resources.py::TestAPersonsValuesBesideOurs
deadline-budget-100|webhook/server/deadline.py|s/^BUDGET = 0.8/BUDGET = 1.0/|tests/server/test_attacks.py -k 80_percent
deadline-budget-50|webhook/server/deadline.py|s/^BUDGET = 0.8/BUDGET = 0.5/|tests/server/test_attacks.py -k 80_percent
deadline-ge-for-lt|webhook/server/mutate.py|s/- arrived >= BUDGET/- arrived < BUDGET/|tests/server/test_attacks.py -k 80_percent
layering-upward-import|webhook/core/model/qos.py|$a import webhook.server.deadline  # noqa: E402|tests/test_layering.py
watch-released-not-closed|webhook/cluster/watch.py|/^            response.close()$/d|tests/cluster/test_watch_resources.py::TestStopping
readme-enforce-not-a-mode|webhook/core/model/namespace.py|s/ENFORCE = "enforce"/ENFORCE = "enforced"/|tests/test_readme.py::TestAgainstTheFakeApiServer::test_opting_a_namespace_in_labels_it
readme-policy-label-unread|webhook/core/model/namespace.py|s/POLICY_LABEL = PREFIX + "policy"/POLICY_LABEL = PREFIX + "policies"/|tests/test_readme.py::TestAgainstTheFakeApiServer::test_opting_a_namespace_in_labels_it
readme-restart-not-tailored|webhook/core/model/namespace.py|s/ENFORCE = "enforce"/ENFORCE = "enforced"/|tests/test_readme.py::TestAgainstTheFakeApiServer::test_rollout_restart_changes_the_template
readme-probe-path-unserved|manifests/base/webhook-deployment.yaml|s#path: /readyz#path: /ready#|tests/test_readme.py::TestAgainstTheFakeApiServer::test_rollout_status_waits
readme-annotation-header|webhook/core/model/explain.py|s/f" workload={workload}"/f" for={workload}"/|tests/test_readme.py::TestAgainstTheFakeApiServer::test_reading_the_annotation_prints_it
EOF
)

rm -rf "$WORK" && mkdir -p "$REPO"
(cd "$ROOT" && git ls-files -z --cached --others --exclude-standard | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$REPO"
for shared in "$ROOT/../shared" "$ROOT/../../shared"; do
    if [ -d "$shared/corpus" ]; then ln -s "$(cd "$shared" && pwd)" "$WORK/shared"; break; fi
done
imported=$(cd "$REPO" && "$PYTHON" -c 'import webhook; print(webhook.__file__)')
[ "$imported" = "$REPO/webhook/__init__.py" ] || { echo "the copy imports $imported, not its own webhook"; exit 2; }

status=0
while IFS='|' read -r name file expression tests; do
    [ -n "$name" ] || continue
    if [ $# -gt 0 ]; then
        wanted=no
        for prefix in "$@"; do case $name in "$prefix"*) wanted=yes ;; esac; done
        [ $wanted = yes ] || continue
    fi
    cp "$ROOT/$file" "$REPO/$file"
    sed -i -e "$expression" "$REPO/$file"
    if cmp -s "$ROOT/$file" "$REPO/$file"; then
        printf "%-36s NOT APPLIED  sed -i -e '%s' %s\n" "$name" "$expression" "$file"; status=1; continue
    fi
    # shellcheck disable=SC2086  # the test arguments are words
    summary=$(cd "$REPO" && timeout 900 "$PYTHON" -m pytest -x -p no:cacheprovider $tests 2>&1 \
              | grep -E '[0-9]+ (passed|failed|errors?|deselected|skipped)|no tests ran' | tail -1)
    cp "$ROOT/$file" "$REPO/$file"
    case $summary in
        *failed*|*error*) verdict=killed ;;
        *passed*) verdict=SURVIVED; status=1 ;;
        *) verdict="NO TEST"; status=1 ;;
    esac
    printf "%-36s %-8s sed -i -e '%s' %s && pytest %s  -> %s\n" "$name" "$verdict" "$expression" "$file" "$tests" \
        "$summary"
done <<< "$ROWS"
exit $status
