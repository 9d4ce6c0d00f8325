import contextlib
import io
import unittest

from {{ moduleName }}.cli import greet, main


class GreetTest(unittest.TestCase):
    def test_greets_by_name(self) -> None:
        self.assertEqual(greet(" Ada "), "Hello, Ada!")

    def test_main_prints_the_greeting(self) -> None:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            self.assertEqual(main(["Ada"]), 0)
        self.assertEqual(out.getvalue(), "Hello, Ada!\n")

    def test_main_exits_1_for_an_empty_name(self) -> None:
        with contextlib.redirect_stderr(io.StringIO()):
            self.assertEqual(main([" "]), 1)


if __name__ == "__main__":
    unittest.main()
