"""The masking question's RE2 search without the package's __init__ answers as the package does."""

from __future__ import annotations

import json
import subprocess
import sys

#: In a fresh process: the unions searched with the binding alone, then with the package.
CHILD = r"""
import json, sys
from s3spill.context.secrets import triggers
from s3spill.context.secrets.re2_light import searcher
texts = [b"", b"plain text\n", b"path=/api/v1/items/00000014\n", b"key: AKIAIOSFODNN7EXAMPLE\n",
         b"x" * 5000 + b"\ntoken = 'ghp_0123456789abcdefghijABCDEFGHIJ0123'\n", b"sha256:" + b"ab" * 32,
         b"caf\xc3\xa9=\xff\xfe" * 40, b"-----BEGIN RSA PRIVATE KEY-----\n"]
patterns = [("|".join(f"(?:{triggers.sieve(k)})" for k in triggers.TRIGGERS)),
            ("|".join(f"(?:{triggers.prefilter(k)})" for k in triggers.TRIGGERS)),
            ("|".join(f"(?:{triggers.TRIGGERS[k]})" for k in triggers.TRIGGERS)), r"[\x80-\xff]{2}", "=\xff"]
alone = [[searcher(p.encode("latin-1"), max_mem=64 << 20)(t) for t in texts] for p in patterns]
package_loaded = "re2" in sys.modules
try:
    searcher(b"(unclosed", max_mem=8 << 20)
except Exception as exc:
    refused = type(exc).__name__
import re2
opts = re2.Options()
opts.encoding = re2.Options.Encoding.LATIN1
opts.never_capture = True
opts.max_mem = 64 << 20
package = [[(m.span() if (m := re2.compile(p.encode("latin-1"), opts).search(t)) else None) for t in texts]
           for p in patterns]
again = [[searcher(p.encode("latin-1"), max_mem=64 << 20)(t) for t in texts] for p in patterns]
print(json.dumps({"alone": alone, "package": package, "again": again, "package_loaded": package_loaded,
                  "refused": refused, "same_error": refused == re2.error.__name__,
                  "one_binding": re2._re2 is sys.modules["re2._re2"]}))
"""


def test_the_binding_alone_finds_what_the_package_finds() -> None:
    """Same spans for the three trigger unions and non-ASCII bytes, no ``re2`` package loaded
    until the comparison, a refused pattern raises ``re2.error``, and ``import re2`` reuses the
    loaded binding (after it, the package's own compile is used)."""
    out = json.loads(subprocess.run([sys.executable, "-c", CHILD], capture_output=True, text=True, check=True,
                                    timeout=60).stdout)
    assert out["alone"] == out["package"] == out["again"]
    assert any(span is not None for row in out["alone"] for span in row)
    assert any(span is None for row in out["alone"] for span in row)
    assert not out["package_loaded"] and out["same_error"] and out["one_binding"]


#: In a fresh process: eight threads compile and search at once, one of them importing re2.
THREADS = r"""
import sys, threading
from s3spill.context.secrets.re2_light import searcher
start, errors = threading.Barrier(8), []
def work(i):
    start.wait()
    try:
        if i == 0:
            import re2
        assert searcher(b"a+b", max_mem=8 << 20)(b"xaab") == (1, 4)
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(errors)
"""


def test_threads_that_load_it_at_once_load_one_binding() -> None:
    """Loading the binding alone takes the import lock of its name, so threads racing each other
    or ``import re2`` never load it twice (pybind11 refuses that: "RE2 is already registered")."""
    for _ in range(5):
        out = subprocess.run([sys.executable, "-c", THREADS], capture_output=True, text=True, check=True,
                             timeout=60).stdout
        assert out.strip() == "[]"
