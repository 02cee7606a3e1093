# Generates the pickle test inputs in this directory. Run once with
# python3 (3.8+) from this directory; the outputs are committed and the
# expected Go values live in decode_test.go.
import collections
import pickle

scalars = [None, True, False, 0, 1, -1, 255, 256, 65535, 65536,
           -2**31, 2**31 - 1, 2**31, 2**63 - 1, -2**63, 2**63, -2**63 - 1,
           2**100, -(2**100), 1.5, -0.0, 1e300, "", "abc", "h\u00e9llo \u2603",
           "a\nb\\c\x00\r\x1a", "x" * 300]

containers = {
    "a": [1, 2, (3, "x")],
    5: "int key",
    (1, "t"): None,
    "nested": {"k": []},
    "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
    "long": list(range(2500)),
    "dict": {str(i): i for i in range(1200)},
}

shared_list = [1]
shared = {"x": shared_list, "y": shared_list}

recursive = []
recursive.append(recursive)

rectuple = ([],)
rectuple[0].append(rectuple)

cases = {
    "rectuple": (rectuple, range(0, 6)),
    "scalars": (scalars, range(0, 6)),
    "containers": (containers, range(0, 6)),
    "shared": (shared, range(0, 6)),
    "recursive": (recursive, range(0, 6)),
    "sets": ({"set": {7}, "fs": frozenset([8]), "e": set()}, range(4, 6)),
    "bytes": ([b"\x00\xff", b"y" * 300], range(3, 6)),
    "bytearray": (bytearray(b"xyz"), [5]),
    "ordereddict": (collections.OrderedDict(a=1), [0, 2, 4]),
    "complex": (1 + 2j, [2]),
}

for name, (value, protos) in cases.items():
    for p in protos:
        with open(f"{name}.p{p}.pickle", "wb") as f:
            pickle.dump(value, f, protocol=p)
