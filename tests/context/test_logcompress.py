"""Log compression keeps every failure and its stack and folds the noise."""

from __future__ import annotations

import random

from s3spill.context.logcompress import compress_log, normalise

FAILURE_BLOCK = [
    " FAIL  src/billing.test.ts > charges the right amount",
    "AssertionError: expected 1099 to be 999 // Object.is equality",
    "",
    "- Expected",
    "+ Received",
    "",
    "- 999",
    "+ 1099",
    "",
    " ❯ src/billing.test.ts:42:15",
    "     40|   it('charges the right amount', () => {",
    "     41|     const total = charge(cart)",
    "     42|     expect(total).toBe(999)",
    "       |                   ^",
    "     43|   })",
    "     44| })",
]
STACK = [line for line in FAILURE_BLOCK if "❯" in line or "|" in line]


def vitest_failure_log(lines: int = 394, seed: int = 7) -> str:
    """A realistic `vitest --reporter=verbose` run with one failing test."""
    rng = random.Random(seed)
    areas = ["utils/format", "utils/dates", "api/client", "api/retry", "cart/totals", "auth/session",
             "ui/button", "ui/modal", "store/cache", "i18n/plural"]
    verbs = ["formats", "parses", "rejects", "retries", "caches", "renders", "handles", "computes"]
    nouns = ["ISO dates", "empty input", "unicode names", "large carts", "expired tokens", "nested keys",
             "null values", "plural forms", "timeouts", "discount codes", "currency rounding"]
    head = [" RUN  v1.6.0 /home/ci/app", ""]
    tail = [
        "⎯⎯⎯⎯⎯⎯⎯ Failed Tests 1 ⎯⎯⎯⎯⎯⎯⎯",
        "",
        *FAILURE_BLOCK,
        "",
        "⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯⎯[1/1]⎯",
        "",
        " Test Files  1 failed | 24 passed (25)",
        "      Tests  1 failed | 368 passed (369)",
        "   Start at  10:12:01",
        "   Duration  4.21s (transform 512ms, setup 0ms, collect 1.2s, tests 2.1s, environment 3ms)",
        "",
    ]
    inline_fail = [
        " ❯ src/billing.test.ts (5 tests | 1 failed) 15ms",
        "   × charges the right amount 5ms",
        "     → expected 1099 to be 999 // Object.is equality",
    ]
    body: list[str] = []
    while len(head) + len(body) + len(inline_fail) + len(tail) < lines:
        area = rng.choice(areas)
        body.append(f" ✓ src/{area}.test.ts > {rng.choice(verbs)} {rng.choice(nouns)} {rng.randint(1, 40)}ms")
    cut = len(body) * 2 // 3
    body[cut:cut] = inline_fail
    out = head + body + tail
    assert len(out) == lines
    return "\n".join(out) + "\n"


def eslint_log() -> str:
    """A realistic eslint stylish report: nearly every line is a problem, so little to fold."""
    rng = random.Random(3)
    rules = [
        ("error", "'{v}' is assigned a value but never used", "@typescript-eslint/no-unused-vars"),
        ("warning", "Unexpected console statement", "no-console"),
        ("error", "Missing return type on function", "@typescript-eslint/explicit-function-return-type"),
        ("warning", "React Hook useEffect has a missing dependency: '{v}'", "react-hooks/exhaustive-deps"),
        ("error", "'{v}' is defined but never used", "no-unused-vars"),
        ("error", "Unexpected any. Specify a different type", "@typescript-eslint/no-explicit-any"),
    ]
    names = ["size", "color", "props", "state", "user", "items", "config", "theme", "value", "ref"]
    out: list[str] = []
    errors = warnings = 0
    for f in range(12):
        out.append(f"/home/ci/app/src/components/Widget{f}.tsx")
        for _ in range(rng.randint(3, 7)):
            level, message, rule = rng.choice(rules)
            errors += level == "error"
            warnings += level == "warning"
            text = message.format(v=rng.choice(names))
            out.append(f"  {rng.randint(1, 300)}:{rng.randint(1, 40)}  {level:<7}  {text}  {rule}")
        out.append("")
    out.append(f"✖ {errors + warnings} problems ({errors} errors, {warnings} warnings)")
    out.append("  3 errors and 0 warnings potentially fixable with the `--fix` option.")
    return "\n".join(out) + "\n"


def test_vitest_failure_log_keeps_every_failure_and_its_stack() -> None:
    """394 lines: every FAIL/Error/assertion line and the whole stack survive, saving over 80%."""
    log = vitest_failure_log()
    assert log.count("\n") == 394
    result = compress_log(log)
    assert result.changed and result.saving > 0.80
    shown = result.text.splitlines()
    must_keep = [
        ln for ln in log.splitlines()
        if any(w in ln for w in ("FAIL", "Error", "assert", "expected", "failed", "×"))
    ]
    assert len(must_keep) >= 7
    for line in must_keep + STACK + ["- Expected", "+ Received", "- 999", "+ 1099"]:
        assert line in shown, line
    # The stack is kept whole and in order.
    start = shown.index(STACK[0])
    assert shown[start : start + len(STACK)] == STACK
    assert any(ln.startswith("… [") and ln.endswith(" lines omitted]") for ln in shown)
    assert result.text.endswith("\n")
    print(f"vitest: {result.original_lines} -> {result.shown_lines} lines, saved {result.saving:.1%}")


def test_eslint_log_with_little_to_save_is_returned_unchanged() -> None:
    """An eslint report where almost every line is a problem saves < 15%, so it is left as it is."""
    log = eslint_log()
    assert log.count("\n") >= 40
    result = compress_log(log)
    assert not result.changed
    assert result.text is log and result.saving == 0.0
    assert result.attempted_saving < 0.15
    print(f"eslint: would have saved {result.attempted_saving:.1%}, returned unchanged")


def test_short_input_is_a_no_op() -> None:
    """Fewer lines than the minimum are not worth compressing."""
    log = "ok\n" * 10 + "Error: x\n"
    assert compress_log(log).text is log


def test_near_duplicates_collapse_with_a_count() -> None:
    """Lines equal once digits and hex are normalised collapse to the first line and ×N."""
    lines = [f"error: request 0x{i:08x} attempt {i}: connection refused" for i in range(30)]
    log = "\n".join(["start"] * 1 + lines + [f"noise line {c}" for c in "abcdefghijklmnopqrstuvwxyz"] * 2)
    result = compress_log(log)
    assert "error: request 0x00000000 attempt 0: connection refused ×30" in result.text
    assert normalise("at 0xdeadbeef line 12") == normalise("at 0x1234 line 99")
    assert normalise("sha 3f2a9c1d7e") == normalise("sha 0011223344")


def test_python_traceback_is_kept_whole() -> None:
    """A Python traceback between an anchor and its exception line is kept frame by frame."""
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    noise = [f"collecting {words[i % 6]}_{words[i // 6 % 6]}_{words[i // 36]}.py ... done" for i in range(60)]
    tb = [
        "Traceback (most recent call last):",
        '  File "/app/run.py", line 10, in <module>',
        "    main()",
        '  File "/app/run.py", line 6, in main',
        "    return compute(0)",
        '  File "/app/calc.py", line 3, in compute',
        "    return 1 / x",
        "ZeroDivisionError: division by zero",
    ]
    log = "\n".join(noise[:30] + tb + noise[30:])
    result = compress_log(log)
    assert result.changed
    shown = result.text.split("\n")
    start = shown.index(tb[0])
    assert shown[start : start + len(tb)] == tb
    assert "… [28 lines omitted]" in shown  # 30 noise lines minus 2 lines of context


def test_a_log_without_any_anchor_is_left_to_the_head_tail_preview() -> None:
    """No error, failure, warning or summary line: nothing to keep, so compression is a no-op."""
    log = "\n".join(f"downloading chunk {c} of the archive" for c in "abcdefghijklmnopqrstuvwxyz" * 3)
    assert not compress_log(log).changed
