"""scripts/layers on small source trees made here, whose calls are known: it must find the
cycle, the call going up the layer table, the long file and the file without an opening
comment that were put there, and nothing in a tree that has none."""
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

SOURCE = os.environ.get("ANA_SOURCE") or os.path.join(os.path.dirname(__file__), "..", "..")
LAYERS = os.path.join(os.path.abspath(SOURCE), "scripts", "layers")
CC = shutil.which("cc") or shutil.which("gcc")


def scratch():
    """A new directory, removed when the test process exits."""
    d = tempfile.mkdtemp(prefix="ana-layers-")
    atexit.register(shutil.rmtree, d, True)
    return d


def tree(files):
    """Writes files {relative path: text} under a new source root, compiles every .c into
    build/obj/, writes build/compile_commands.json; returns (root, build)."""
    root = scratch()
    build = os.path.join(root, "build")
    os.makedirs(os.path.join(build, "obj"))
    entries = []
    for rel, text in files.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        if rel.endswith(".c"):
            obj = os.path.join("obj", rel.replace("/", "_") + ".o")
            subprocess.run([CC, "-c", "-o", os.path.join(build, obj), path], check=True)
            entries.append({"directory": build, "file": path,
                            "command": "cc -o %s -c %s" % (obj, path)})
    with open(os.path.join(build, "compile_commands.json"), "w") as f:
        json.dump(entries, f)
    return root, build


def check(root, build):
    r = subprocess.run([sys.executable, LAYERS, "--source", root, "--build", build],
                       capture_output=True, text=True)
    return r.returncode, r.stdout + r.stderr


def c(what, body):
    return "/* %s */\n%s\n" % (what, body)


GOOD = {
    "format/codec.c": c("codec", "int ana_codec(int x) { return x + 1; }"),
    "analyzer/model/trace.c": c("model", "int ana_codec(int);\nint ana_trace(int x) { return ana_codec(x); }"),
    "analyzer/analyses/steps.c": c("steps", "int ana_trace(int);\nint ana_steps(int x) { return ana_trace(x); }"),
    "analyzer/cli/main.c": c("main", "int ana_steps(int);\nint main(void) { return ana_steps(0); }"),
}


@unittest.skipUnless(CC, "no C compiler")
class Layers(unittest.TestCase):
    def test_a_tree_that_keeps_the_rules_passes(self):
        rc, out = check(*tree(GOOD))
        self.assertEqual(rc, 0, out)
        self.assertIn("4 files, 3 edges; 0 cycles, 0 calls going up, 0 files over 600 lines", out)

    def test_a_cycle_between_two_files_of_one_folder_fails_and_names_the_symbols(self):
        files = dict(GOOD)
        files["analyzer/model/index.c"] = c("index", "int ana_trace(int);\nint ana_index(int x) { return ana_trace(x); }")
        files["analyzer/model/trace.c"] = c("model", "int ana_index(int);\nint ana_trace(int x) { return x ? ana_index(x - 1) : 0; }")
        rc, out = check(*tree(files))
        self.assertEqual(rc, 1, out)
        self.assertIn("cycle of 2 files: analyzer/model/index.c analyzer/model/trace.c", out)
        self.assertIn("analyzer/model/index.c -(ana_trace)-> analyzer/model/trace.c -(ana_index)->", out)

    def test_a_call_up_the_table_fails(self):
        files = dict(GOOD)
        files["analyzer/views/text.c"] = c("text", "int ana_text(int x) { return x; }")
        files["analyzer/model/trace.c"] = c("model", "int ana_text(int);\nint ana_trace(int x) { return ana_text(x); }")
        rc, out = check(*tree(files))
        self.assertEqual(rc, 1, out)
        self.assertIn("analyzer/model/trace.c -> analyzer/views/text.c: analyzer/model may not call "
                      "analyzer/views (ana_text)", out)
        self.assertIn("0 cycles, 1 calls going up", out)

    def test_the_analyzer_and_the_preload_are_separate_programs(self):
        # The same name in both is no edge between them.
        files = dict(GOOD)
        files["preload/core/clock.c"] = c("clock", "int ana_trace(int x) { return x; }")
        files["preload/hooks/mem.c"] = c("mem", "int ana_trace(int);\nint ana_mem(void) { return ana_trace(1); }")
        rc, out = check(*tree(files))
        self.assertEqual(rc, 0, out)
        self.assertIn("6 files, 4 edges", out)

    def test_a_long_file_a_file_without_comment_and_a_file_outside_the_table_fail(self):
        files = dict(GOOD)
        files["analyzer/model/big.c"] = c("big", "\n".join("int v%d;" % i for i in range(601)))
        files["analyzer/model/bare.c"] = "int ana_bare(void) { return 0; }\n"
        files["analyzer/misc/odd.c"] = c("odd", "int ana_odd(void) { return 0; }")
        rc, out = check(*tree(files))
        self.assertEqual(rc, 1, out)
        self.assertIn("analyzer/model/big.c: 602 lines (at most 600)", out)
        self.assertIn("analyzer/model/bare.c: does not open with a comment", out)
        self.assertIn("analyzer/misc/odd.c: in no folder of the layer table", out)

    def test_a_missing_build_is_exit_2(self):
        root = scratch()
        rc, out = check(root, os.path.join(root, "nope"))
        self.assertEqual(rc, 2, out)
        self.assertIn("build first", out)


if __name__ == "__main__":
    unittest.main()
