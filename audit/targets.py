"""What ``canonmerge audit`` mutates: the files, mutmut's operators, and what is out of scope.

The targets are the code the claims are about: ``spec/``, realstate's render,
RoPE, order value, fragment/content id, fingerprint and engine, and the proof encodings.

Operators are mutmut 3.8's node operators, pinned by name.  Left out, with the reason:

- ``operator_string``: rewrites string literals, almost all of them messages and labels here
  (the strings that matter — the content-id magic, struct formats, byte order — are covered by
  curated entries);
- ``operator_assignment`` (``x = ...`` -> ``x = None``) and ``operator_arg_removal`` (drop an
  argument or pass ``None``): nearly all crash on first use, which would pad the kill ratio with
  trivial kills;
- ``operator_dict_arguments`` and the two string-method swaps: no ``dict(k=v)`` calls or string
  methods on the targets' computing paths.

Inside a target, mutmut's own rules apply (no docstrings, annotations, decorators, non-trivial
default arguments) and the audit adds two: ``raise`` statements (error messages) are not
mutated, and the functions or module constants named in ``skip`` are out of scope for the
reason given — code that no valid input can reach (input validation and parsing, tested by
pytest), and counterexample presentation, which shapes what a refutation prints but never a
verdict."""

from __future__ import annotations

from dataclasses import dataclass, field

OPERATORS = ("operator_number", "operator_name", "operator_augmented_assignment", "operator_remove_unary_ops",
             "operator_lambda", "operator_keywords", "operator_swap_op", "operator_match", "operator_if_exp")

EXCLUDED_OPERATORS = {
    "operator_string": "string literals here are messages and labels; the ones that matter are curated",
    "operator_assignment": "x = None crashes on first use: trivial kills that would pad the ratio",
    "operator_arg_removal": "dropping an argument or passing None crashes on first use: trivial kills",
    "operator_dict_arguments": "no dict(k=v) calls on the targets' computing paths",
    "operator_symmetric_string_methods_swap": "no string methods on the targets' computing paths",
    "operator_unsymmetrical_string_methods_swap": "no string methods on the targets' computing paths",
}

VALIDATION = ("input validation: only reached by invalid input, which verify never builds; the "
              "rejections are tested by pytest (tests/test_*bad_inputs*, test_fragment_file_fuzz)")
PARSING = "parses fragment files and hex ids from users; verify reads no files (pytest covers it)"
PRESENTATION = ("counterexample presentation: the text a refutation prints, or a soft preference for "
                "small witnesses (proofs.obligation: never part of the verdict)")
DISPLAY = "display only (repr): no verdict reads it"
REFERENCE = ("the literal RoPE formula, used only by tests and the --plant demos; renders use "
             "reencode_into, which is in scope")


@dataclass(frozen=True)
class Target:
    """One file; ``skip`` maps a function, class or module constant (qualified name) to why it is
    out of scope.  Everything nested in a skipped name is skipped with it.  ``parts`` names the
    commands whose runs exercise the file, where those are not verify's."""

    path: str
    skip: dict[str, str] = field(default_factory=dict)
    parts: tuple[str, ...] = ()  # the commands that exercise the file (empty: verify's parts)

    def out_of_scope(self, function: str) -> bool:
        parts = function.split(".")
        return any(".".join(parts[:k]) in self.skip for k in range(1, len(parts) + 1))


TARGETS: tuple[Target, ...] = (
    Target("spec/claims.py", {"Check.__post_init__": VALIDATION, "claim": VALIDATION}),
    Target("spec/fragment_set.py", {"FragmentSet.__repr__": DISPLAY, "iteration_order": VALIDATION}),
    Target("spec/ids.py", {"parse_content_id_hex": PARSING, "content_id_hex": DISPLAY}),
    Target("spec/laws.py"),
    Target("spec/ordering.py"),
    Target("realstate/kernel/render.py", {"_common_fingerprint": VALIDATION}),
    Target("realstate/kernel/rope.py", {"rotate_half": REFERENCE, "reencode_reference": REFERENCE}),
    Target("realstate/kernel/fused.py"),
    Target("realstate/kernel/order_value.py"),
    Target("realstate/kernel/fragment.py", {"_validate": VALIDATION, "Fragment.__repr__": DISPLAY}),
    Target("realstate/kernel/engine.py"),
    Target("realstate/kernel/fingerprint.py", {"Fingerprint.__post_init__": VALIDATION, "Fingerprint.from_json": PARSING,
                                        "_f64_from_bits": PARSING, "_F64_HEX": PARSING,
                                        "Fingerprint.describe_mismatch": DISPLAY}),
    Target("proofs/ordering.py", {"fragment_witness": PRESENTATION, "_pattern_witness": PRESENTATION,
                                  "plain_fragments": PRESENTATION, "plain_patterns": PRESENTATION,
                                  "PLAIN_FLOATS": PRESENTATION}),
    Target("proofs/render.py", {"sorted_unique_bounded.describe": PRESENTATION}),
    Target("proofs/fragment_set.py", {"_set_text": PRESENTATION, "set_witness": PRESENTATION,
                                      "bounded_delivery.describe": PRESENTATION}),
    Target("proofs/bag.py", {"_witness": PRESENTATION}),
)

TRACES = ("counterexample presentation: the smallest witness and the trace a failing row saves or prints; "
          "a row fails before any of it runs")
REPORTING = "display only: the text or table a row prints; no outcome and no exit code reads it"
_CHECKING = ("check", "realstate")  # modelcheck's search and the oracle comparison: check's shards, the replay's rows

# The checkers' own files, a group apart (``canonmerge audit --targets instruments``) so that
# verify's ratio stays comparable: modelcheck's search, unions, shards, coverage watcher and canaries
# (run by check, and by realstate's order rows), the oracle comparison, the soak's judge, ledger,
# directory store, hostile neighbour's verdict and power-loss model (run by soak), the distributed
# replay's agreement and faulty gathers (replicate), and the bench's structural rows (bench).
INSTRUMENT_TARGETS: tuple[Target, ...] = (
    Target("modelcheck/order_checks.py", {"OrderChecks.minimize": TRACES, "OrderChecks.c3_trace": TRACES,
                                          "OrderChecks._engine_trace": TRACES}, _CHECKING),
    Target("modelcheck/universe_search.py", {"UniverseSearch.trace": TRACES, "UniverseSearch._oracle_trace": TRACES,
                                             "UniverseSearch._oracle_bag_trace": TRACES}, _CHECKING),
    Target("modelcheck/unions.py", parts=_CHECKING),
    Target("modelcheck/shards.py", {"Shard.describe": REPORTING}, _CHECKING),
    Target("modelcheck/coverage.py", parts=_CHECKING),
    Target("modelcheck/instruments.py", {"_coverage_table": REPORTING}, _CHECKING),
    Target("modelcheck/canary.py", parts=_CHECKING),
    Target("modelcheck/plan_coverage.py", parts=_CHECKING),
    Target("modelcheck/selection_check.py", parts=_CHECKING),
    Target("modelcheck/gossip.py", parts=("check",)),
    Target("modelcheck/gossip_model.py", parts=("check",)),
    Target("modelcheck/gossip_search.py", parts=("check",)),
    Target("modelcheck/gossip_symmetry.py", parts=("check",)),
    Target("modelcheck/gossip_verdict.py", parts=("check",)),
    Target("modelcheck/gossip_controls.py", {"moves_differences": REPORTING}, ("check",)),
    Target("modelcheck/gossip_reference.py", parts=("check",)),
    Target("modelcheck/gossip_census.py", parts=("check",)),
    Target("modelcheck/gossip_census_checks.py", parts=("check",)),
    Target("oracle/compare.py", {"Mismatch.__str__": REPORTING, "_show": REPORTING}, _CHECKING),
    Target("realstate/processes/soak/judge.py", parts=("soak",)),
    Target("realstate/processes/soak/ledger.py", parts=("soak",)),
    Target("realstate/exchange/stores/directory.py", {"_os_problem": REPORTING}, ("soak",)),
    Target("realstate/processes/soak/neighbour.py", parts=("soak",)),
    Target("realstate/processes/soak/power.py", parts=("soak",)),
    Target("realstate/processes/replicate/agreement.py", parts=("replicate",)),
    Target("realstate/processes/replicate/faulty_gathers.py", parts=("replicate",)),
    Target("realstate/bench/structural.py", parts=("bench",)),
)

GROUPS: dict[str, tuple[Target, ...]] = {"verify": TARGETS, "instruments": INSTRUMENT_TARGETS}

NOT_TARGETED = {
    "spec/__init__.py": "re-exports only",
    "spec/errors.py": "one exception class",
    "spec/report.py": "plain records (dataclasses) the parts hand to the CLI",
    "spec/index.py": "renders the claim index as markdown for docs and `canonmerge claims`; verify never calls it",
    "proofs/links.py": ("the code-link checker itself: a mutant of a checker can only be killed by making it fail "
                        "on correct code, while its power is what the planted bugs in spec/ measure"),
}


def target(path: str) -> Target:
    for group in GROUPS.values():
        for t in group:
            if t.path == path:
                return t
    every = ", ".join(t.path for group in GROUPS.values() for t in group)
    raise KeyError(f"{path} is not an audit target; targets: {every}")
