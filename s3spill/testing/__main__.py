"""``python -m s3spill.testing``: the child process of :class:`~s3spill.testing.server.EmbeddedS3`."""

from __future__ import annotations

import argparse

from s3spill.testing.server import serve


def main(argv: list[str] | None = None) -> int:
    """The child-process entry of :class:`EmbeddedS3` (users run ``s3spill serve-s3``)."""
    parser = argparse.ArgumentParser(description="serve an embedded, serialized moto S3")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when standard input closes (the parent process died)")
    args = parser.parse_args(argv)
    serve(args.port, exit_on_stdin_eof=args.exit_on_stdin_eof)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
