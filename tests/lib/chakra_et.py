#!/usr/bin/env python3
# chakra_et.py - write Chakra execution traces (MLCommons Chakra,
# schema/protobuf/et_def.proto) for the tests, with no protobuf library:
# each file is varint-length-delimited messages, a GlobalMetadata then the
# rank's Nodes, as Chakra's protoio writes them. Imported by the tests;
# `python3 chakra_et.py DIR` writes the example of docs/importers.md.
import os
import struct
import sys

COMP, SEND, RECV, COLL = 4, 5, 6, 7
ALL_REDUCE, REDUCE, ALL_GATHER, GATHER, BROADCAST, ALL_TO_ALL, REDUCE_SCATTER, BARRIER = \
    0, 1, 2, 3, 5, 6, 7, 9


def varint(v):
    v &= (1 << 64) - 1		# negative int64: two's complement, 10 bytes
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def key(field, wire):
    return varint(field << 3 | wire)


def ld(field, data):		# a length-delimited field
    return key(field, 2) + varint(len(data)) + data


def attr(name, value):
    """An AttributeProto: bool -> bool_val, int -> int64_val, str -> string_val,
    ('u64', v) -> uint64_val, ('i32', v) -> int32_val, ('d', v) -> double_val."""
    m = ld(1, name.encode())
    if isinstance(value, bool):
        m += key(27, 0) + varint(int(value))
    elif isinstance(value, int):
        m += key(9, 0) + varint(value)
    elif isinstance(value, str):
        m += ld(29, value.encode())
    elif value[0] == "u64":
        m += key(13, 0) + varint(value[1])
    elif value[0] == "i32":
        m += key(7, 0) + varint(value[1])
    elif value[0] == "d":
        m += key(3, 1) + struct.pack("<d", value[1])
    return m


def node(nid, name, ntype, data_deps=(), ctrl_deps=(), dur_us=0, attrs=(), packed=True):
    m = key(1, 0) + varint(nid) + ld(2, name.encode()) + key(3, 0) + varint(ntype)
    if ctrl_deps:
        m += ld(4, b"".join(varint(d) for d in ctrl_deps))
    if data_deps:
        if packed:
            m += ld(5, b"".join(varint(d) for d in data_deps))
        else:
            m += b"".join(key(5, 0) + varint(d) for d in data_deps)
    m += key(6, 0) + varint(12345)		# start_time_micros: not used
    if dur_us:
        m += key(7, 0) + varint(dur_us)
    m += ld(8, ld(1, b"[]") + ld(2, b"[]"))	# inputs: not used
    for a in attrs:
        m += ld(10, attr(*a))
    return m


def write(path, nodes, version="0.0.4"):
    meta = ld(1, version.encode()) + ld(2, attr("schema", "1.0.2-chakra.0.0.4"))
    with open(path, "wb") as f:
        for m in [meta] + list(nodes):
            f.write(varint(len(m)) + m)


def dp_step(d, ranks=8, size=16 << 20):
    """A data-parallel step on every rank: forward, backward, the host's
    c10d call and the GPU's allreduce of the gradients, the optimizer."""
    for r in range(ranks):
        write(os.path.join(d, f"dp.{r}.et"), [
            node(1, "fwd", COMP, dur_us=100, attrs=[("is_cpu_op", False)]),
            node(2, "bwd", COMP, data_deps=[1], dur_us=200, attrs=[("is_cpu_op", False)]),
            node(3, "c10d::allreduce_", COLL, data_deps=[2], ctrl_deps=[99], dur_us=7,
                 attrs=[("is_cpu_op", True)]),
            node(4, "ncclKernel_AllReduce", COLL, data_deps=[2, 3], attrs=[
                ("is_cpu_op", False), ("comm_type", ALL_REDUCE), ("comm_size", size)]),
            node(5, "opt", COMP, data_deps=[4], dur_us=50, attrs=[("is_cpu_op", False)]),
        ])


if __name__ == "__main__":
    dp_step(sys.argv[1])
