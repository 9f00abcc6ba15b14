"""The trigger pass: Hyperscan and RE2 find the same candidate lines, and neither skips a secret."""

from __future__ import annotations

import functools
import random
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from s3spill.context.secrets.detector import SecretDetector
from s3spill.context.secrets.engine import HyperscanEngine, Re2Engine, make_engine
from s3spill.context.secrets.masking import LineMasker
from s3spill.context.secrets.triggers import PREFILTERS, TRIGGERS
from tests.context.secrets.clean_build_logs import build_log
from tests.context.secrets.test_detector import SAMPLES


@functools.cache
def _detector(engine: str) -> SecretDetector:
    return SecretDetector(engine)


#: Pieces of the library's keyword and entropy patterns, in the spellings the triggers
#: must still see: white space Python's ``\s`` knows (``\v``, a no-break space), non-ASCII
#: word characters, comparisons, digests and hex runs before a letter.
_PIECES = st.sampled_from([
    *SAMPLES.values(), "password", "PWD", "db_pass", "api_key", "contraseña", "pässword", "secret", "=", "==",
    "!==", ":", "\v", "\u00a0", "\t", " ", '"', "'", "`", ";", "]", "/home/runner", "hunter2", "é", "sha512-",
    "sha1x", "0sha", "h1:", "deadbeef" * 3, "0123abcd", "G", "NODE_OPTIONS", "--max-old-space-size", "AKIA",
    "ghp_", "://", "@", "x" * 20])


def _findings(detector: SecretDetector, text: bytes) -> list[tuple[int, int, str]]:
    masker = LineMasker(detector)
    masker.process(text)
    return masker.spans


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(alphabet="aZ09+/=_-.:@ \"'é", max_size=24)), max_size=8))
def test_both_engines_find_what_every_rule_on_every_line_finds(parts: list[str]) -> None:
    """Hyperscan's and RE2's candidate lines lose no finding of any rule, on random lines."""
    line = "".join(parts).encode("utf-8", "surrogateescape")
    every = _detector("re2").scan_line(line, every_rule=True)
    for engine in ("hyperscan", "re2"):
        spans = [(f.start, f.end, f.kind) for f in every]
        assert _findings(_detector(engine), line) == spans


@settings(max_examples=150, deadline=None)
@given(st.lists(st.one_of(_PIECES, st.text(alphabet="aZ09+/=_-.:@ ", max_size=24)), max_size=8))
def test_a_looser_prefilter_matches_wherever_its_trigger_does(parts: list[str]) -> None:
    """The chunk pass may look for less than a rule's trigger, never for more."""
    import re2

    line = "".join(parts).encode("utf-8", "surrogateescape")
    opts = re2.Options()
    opts.encoding = re2.Options.Encoding.LATIN1
    for kind, loose in PREFILTERS.items():
        if re2.compile(TRIGGERS[kind].encode(), opts).search(line):
            assert re2.compile(loose.encode(), opts).search(line)


def test_both_engines_give_the_same_candidates_on_a_build_log_with_secrets() -> None:
    """The same lines and the same rule sets, on a MiB of CI log with every sample planted."""
    rng = random.Random(3)
    lines = build_log(1 << 20).split(b"\n")
    for sample in SAMPLES.values():
        lines.insert(rng.randrange(len(lines)), sample.encode())
    data = b"\n".join(lines)
    fast = _detector("hyperscan").candidates(data)
    assert fast == _detector("re2").candidates(data)
    assert len(fast) >= len(SAMPLES)
    assert _findings(_detector("hyperscan"), data) == _findings(_detector("re2"), data)


def test_candidates_of_a_range_stay_inside_it() -> None:
    """A scan of ``data[pos:end]`` names lines clipped to that range, in order."""
    data = b"x\n  password=hunter2x\nAKIAIOSFODNN7EXAMPLE and more\ntail"
    pos, end = 3, data.index(b" and")
    for engine in ("hyperscan", "re2"):
        got = _detector(engine).candidates(data, pos, end)
        assert [(s, e) for s, e, _ in got] == [(3, 21), (22, end)]


def test_without_hyperscan_the_detector_uses_re2(monkeypatch: pytest.MonkeyPatch) -> None:
    """The extra is optional: an import that fails leaves the RE2 pass, with the same findings."""
    monkeypatch.setitem(sys.modules, "hyperscan", None)  # import hyperscan raises ImportError
    rules = [(t, PREFILTERS.get(k, t)) for k, t in TRIGGERS.items()]
    assert isinstance(make_engine(rules), Re2Engine)
    with pytest.raises(ImportError):
        make_engine(rules, "hyperscan")
    detector = SecretDetector()
    assert detector.engine.name == "re2"
    line = SAMPLES["github-token"].encode()
    assert [f.kind for f in detector.scan_line(line)] == ["github-token"]


def test_hyperscan_scratch_is_per_thread() -> None:
    """Two threads scanning at once do not share Hyperscan's scratch space."""
    from concurrent.futures import ThreadPoolExecutor

    engine = _detector("hyperscan").engine
    assert isinstance(engine, HyperscanEngine)
    data = b"\n".join(s.encode() for s in SAMPLES.values()) * 200
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: engine.candidates(data, 0, len(data)), range(8)))
    assert all(r == results[0] for r in results)


def test_the_default_detector_builds_hyperscan_only_for_a_large_text() -> None:
    """Small texts (a hook, a page read) never pay for the database; a MiB starts its build
    in the background, RE2 answering meanwhile with the same findings."""
    import time

    detector = SecretDetector()
    line = SAMPLES["github-token"].encode()
    assert _findings(detector, line) and detector.engine.name == "re2"
    time.sleep(0.05)
    assert detector.engine.name == "re2"  # nothing was started
    big = (b"x" * 80 + b"\n") * (1 << 14) + line
    assert _findings(detector, big)[-1][2] == "github-token"
    deadline = time.monotonic() + 30
    while detector.engine.name != "hyperscan" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert detector.engine.name == "hyperscan"
    assert _findings(detector, big) == _findings(_detector("re2"), big)


#: Values the entropy and IBM rules flag that the triggers skipped before (issue 31's last
#: wave): hex of both cases plus ``_=-`` (25 distinct characters, up to 4.64 bits each), a
#: value whose first letter past ``f`` comes late, one that starts ``sha`` but is no
#: digest, and a keyword followed by more spaces than the trigger allowed.
_SKIPPED_BEFORE = [
    "BUILD_NONCE=aE-F=5_dA9bB0716cDef382C4",
    "BUILD_NONCE=Af49512eDa738Cbd6cEBF0ghi",
    "api_token=10fCE724Ac68FbeaD95g",
    "TOKEN_VALUE=sha5kLmN0pQrStUvWxYz12e4BdCaEfGh",
    "iam_key          =          sbcdefgshijsLMNOPQRSTs123456789-abcdefghijkl",
]


@pytest.mark.parametrize("line", _SKIPPED_BEFORE)
def test_a_rule_s_finding_is_never_skipped_by_its_trigger(line: str) -> None:
    """Each line is flagged by some rule, and both engines' trigger passes find it too."""
    data = line.encode()
    every = [(f.start, f.end, f.kind) for f in _detector("re2").scan_line(data, every_rule=True)]
    assert every
    for engine in ("hyperscan", "re2"):
        assert _findings(_detector(engine), data) == every, engine


@settings(max_examples=200, deadline=None)
@given(st.permutations(list("0123456789abcdefABCDEF_=-")), st.integers(0, 25),
       st.sampled_from(["", "g", "s", "sh", "sha", "shaZ", "md5", "md5-", "sha512-", "Q1/+"]),
       st.sampled_from(["KEY_ID=", "x.api_token: ", 'session="', "run_id = '"]))
def test_hex_rich_values_are_triggered_wherever_a_rule_flags_them(chars: list[str], cut: int, insert: str,
                                                                  name: str) -> None:
    """Hex-alphabet values of up to 25 distinct characters, with a non-hex piece anywhere
    (or none): the trigger passes lose no finding of the entropy rule."""
    value = "".join(chars[:cut]) + insert + "".join(chars[cut:])
    data = (name + value).encode()
    every = [(f.start, f.end, f.kind) for f in _detector("re2").scan_line(data, every_rule=True)]
    for engine in ("hyperscan", "re2"):
        assert _findings(_detector(engine), data) == every, engine


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["", "s", "sh", "sha", "sha1", "sha22", "sha256", "sha51", "SHA", "m", "md", "md5",
                        "Md5", "0", "deadbeef", "0123abcdef"]),
       st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-", min_size=8,
               max_size=40),
       st.sampled_from(["BUILD_ID=", "api_token: ", "x.secret = '", "LONGER_NAME_HERE=\""]))
def test_base64_values_are_triggered_wherever_the_entropy_rule_flags_them(start: str, rest: str,
                                                                         name: str) -> None:
    """Random base64-alphabet values behind digest-like and hex starts: both trigger
    passes lose no finding of any rule."""
    data = (name + start + rest).encode()
    every = [(f.start, f.end, f.kind) for f in _detector("re2").scan_line(data, every_rule=True)]
    for engine in ("hyperscan", "re2"):
        assert _findings(_detector(engine), data) == every, engine


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["ab", "abc", "x.api_token", "SESSION_TOKEN", "k-1", "é_key", "12"]),
       st.sampled_from(["", '"', "'"]), st.sampled_from(["", " ", "\t", "  \t ", "\t\t"]),
       st.sampled_from([":", "="]), st.sampled_from(["", " ", "\t "]), st.sampled_from(["", '"', "'", "`"]),
       st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=_-", min_size=18,
               max_size=48))
def test_every_spelling_between_a_name_and_its_value_reaches_the_entropy_rule(
        name: str, quote: str, spaces: str, op: str, after: str, opening: str, value: str) -> None:
    """The entropy prefilter sees a name's last three characters, or the quote or space
    right before the ``:`` or ``=``, in place of the trigger's name, optional quote and
    spaces: no spelling of those is lost (both passes find what every rule finds)."""
    data = f"{name}{quote}{spaces}{op}{after}{opening}{value}".encode()
    every = [(f.start, f.end, f.kind) for f in _detector("re2").scan_line(data, every_rule=True)]
    for engine in ("hyperscan", "re2"):
        assert _findings(_detector(engine), data) == every, engine
