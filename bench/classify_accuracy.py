#!/usr/bin/env python3
"""Accuracy of `anatomist classify` on a labeled set of kernel names.

Usage: bench/classify_accuracy.py LABELED.tsv [ANATOMIST]

LABELED.tsv: lines "class<TAB>reason-or-source<TAB>name" (tests/data/kernel-names/);
lines starting with '#' are comments. ANATOMIST defaults to $ANA_BUILD/bin/anatomist
(ANA_BUILD defaults to build/). Prints the accuracy overall and per labeled class, then
every name the classifier disagrees with ("label -> got  rule  name"). Where notes carry
the GPU time their source gives ([time_us=T]), also the accuracy weighted by that time.
Exit status 0.
Python standard library only; the comparison also serves tests/cli/test_classify.py.
"""
import collections
import os
import subprocess
import sys


def read_labeled(path):
    """[(label, note, name)] of a labeled TSV."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            parts = line.split("\t", 2)
            if len(parts) != 3:
                raise SystemExit(f"{path}:{n}: want class<TAB>note<TAB>name")
            rows.append(tuple(parts))
    return rows


def classify(anatomist, names, context=None):
    """{name: (class, rule)} from one `anatomist classify --explain` run."""
    args = [anatomist, "classify", "--explain"] + (["--context", context] if context else [])
    p = subprocess.run(args, input="".join(n + "\n" for n in names), capture_output=True,
                       text=True, check=True, timeout=120)
    out = {}
    for line in p.stdout.splitlines():
        name, cls, rule = line.rsplit("\t", 2)
        out[name] = (cls, rule)
    return out


def score(rows, got):
    """(correct, total, per-class {label: [correct, total]}, wrong [(label, cls, rule, name)])."""
    per = collections.OrderedDict()
    wrong = []
    for label, _, name in rows:
        cls, rule = got.get(name, ("(missing)", "-"))
        c = per.setdefault(label, [0, 0])
        c[1] += 1
        if cls == label:
            c[0] += 1
        else:
            wrong.append((label, cls, rule, name))
    total = len(rows)
    return total - len(wrong), total, per, wrong


def time_of(note):
    """The GPU time a note gives as [time_us=T], or None."""
    at = note.find("[time_us=")
    if at < 0:
        return None
    try:
        return float(note[at + 9:note.index("]", at)])
    except ValueError:
        return None


def score_by_time(rows, got):
    """(microseconds right, microseconds in all, names with a time): accuracy weighted by
    the GPU time the sources give."""
    ok = total = 0.0
    n = 0
    for label, note, name in rows:
        t = time_of(note)
        if t is None or t <= 0:
            continue
        n += 1
        total += t
        if got.get(name, ("",))[0] == label:
            ok += t
    return ok, total, n


def main():
    if len(sys.argv) not in (2, 3):
        raise SystemExit(__doc__.strip().splitlines()[2])
    anatomist = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        os.environ.get("ANA_BUILD", "build"), "bin", "anatomist")
    rows = read_labeled(sys.argv[1])
    got = classify(anatomist, [r[2] for r in rows])
    ok, total, per, wrong = score(rows, got)
    print(f"{sys.argv[1]}: {ok}/{total} = {100.0 * ok / max(total, 1):.1f}%")
    tok, ttot, n = score_by_time(rows, got)
    if n:
        print(f"  by GPU time (the {n} names whose source gives one, [time_us=T] in the note): "
              f"{tok:.0f}/{ttot:.0f} us = {100.0 * tok / ttot:.1f}%")
    for label, (c, t) in sorted(per.items()):
        print(f"  {label:<14} {c:>4}/{t:<4} {100.0 * c / t:5.1f}%")
    if wrong:
        print("confusions (label -> got, rule, name):")
        for label, cls, rule, name in wrong:
            print(f"  {label} -> {cls}  [{rule}]  {name[:160]}")


if __name__ == "__main__":
    main()
