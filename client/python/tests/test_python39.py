"""The package and its example are Python 3.9 source: the interpreter that
runs the tests may be newer, so every file is parsed with the grammar of
3.9 (ast's feature_version), which refuses what 3.9 cannot read, such as
match statements or parenthesized context managers."""

from __future__ import annotations

import ast
import os
import unittest

_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def _sources():
    for folder in ("tenure", "examples", "tests"):
        for name in sorted(os.listdir(os.path.join(_ROOT, folder))):
            if name.endswith(".py"):
                yield os.path.join(folder, name)


class Python39Test(unittest.TestCase):
    def test_every_file_parses_as_python_3_9(self) -> None:
        files = list(_sources())
        self.assertGreater(len(files), 5)
        for path in files:
            with self.subTest(path=path):
                with open(os.path.join(_ROOT, path), encoding="utf-8") as f:
                    ast.parse(f.read(), filename=path, feature_version=(3, 9))


if __name__ == "__main__":
    unittest.main()
