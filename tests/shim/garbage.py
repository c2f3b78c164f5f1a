#!/usr/bin/env python3
# tests/shim/garbage.py SOCKET - hostile and malformed traffic on the fabric
# daemon's socket (tests/interop/shim_robust.sh). Every malformed request
# must get an error reply or a closed connection, never a crash: the caller
# checks the daemon still serves afterwards. Layout: shim/shim_proto.h
# (struct shim_req is 96 bytes, struct shim_rep 648).
import os, random, re, socket, struct, sys

path = sys.argv[1]
REQ = 96
hdr = open(os.path.join(os.environ["IBFAB_SRC"], "shim/shim_proto.h")).read()
VERSION = int(re.search(r"#define SHIM_VERSION\s+(\d+)", hdr).group(1))
random.seed(7)

def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(5)
    s.connect(path)
    return s

def hello(s):
    body = struct.pack("<IIIII64s", 1, 0, 0x31466249, VERSION, os.getpid(), b"h5")
    s.send(body.ljust(REQ, b"\0"))
    msg, anc, flags, addr = s.recvmsg(1024, socket.CMSG_SPACE(4))
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            os.close(struct.unpack("<i", data[:4])[0])
    return struct.unpack("<i", msg[:4])[0]

def status(s, payload):
    s.send(payload)
    return struct.unpack("<i", s.recv(1024)[:4])[0]

bad = 0
# 1. not a shim at all: random bytes, empty message, a wrong magic
for junk in (os.urandom(37), b"", os.urandom(REQ), struct.pack("<II", 1, 0).ljust(REQ, b"\xff")):
    s = conn()
    try:
        s.send(junk)
        r = s.recv(1024)
        if r and struct.unpack("<i", r[:4])[0] == 0:
            print("FAIL: junk accepted"); bad += 1
    except (socket.timeout, OSError):
        pass
    s.close()
# 2. attached, then malformed requests: each must be refused
s = conn()
if hello(s) != 0:
    print("FAIL: a valid HELLO was refused"); bad += 1
cases = {
    "short": b"\x05\0\0\0",
    "long": os.urandom(5000),
    "unknown op": struct.pack("<II", 999, 0).ljust(REQ, b"\0"),
    "second hello": struct.pack("<IIIII", 1, 0, 0x31466249, VERSION, 1).ljust(REQ, b"\0"),
    "poll bad cq": struct.pack("<IIII", 8, 0, 12345, 1).ljust(REQ, b"\0"),
    "poll n=0": struct.pack("<IIII", 8, 0, 0, 0).ljust(REQ, b"\0"),
    "reg_mr bad seg": struct.pack("<IIII", 3, 0, 77, 7).ljust(REQ, b"\0"),
    "seg without fd": struct.pack("<IIQQ", 2, 0, 4096, 4096).ljust(REQ, b"\0"),
    "destroy qp 2^31": struct.pack("<III", 17, 0, 1 << 31).ljust(REQ, b"\0"),
    "post_send bad qp": struct.pack("<III", 18, 0, 3).ljust(REQ, b"\0"),
    "inline mismatch": struct.pack("<II", 18, 200).ljust(REQ, b"\0"),
    "huge cq": struct.pack("<IIIi", 5, 0, 0xffffffff, -1).ljust(REQ, b"\0"),
    "cq bad channel": struct.pack("<IIIi", 5, 0, 16, 99).ljust(REQ, b"\0"),
    "qp bad cqs": struct.pack("<IIIIIi", 15, 0, 2, 40, 41, -1).ljust(REQ, b"\0"),
}
for name, msg in cases.items():
    try:
        st = status(s, msg)
    except (socket.timeout, OSError) as e:
        print("FAIL: %s: no reply (%s)" % (name, e)); bad += 1
        s = conn(); hello(s)
        continue
    if st == 0:
        print("FAIL: %s accepted" % name); bad += 1
    else:
        print("ok   %s refused (errno %d)" % (name, st))
# 3. random requests with valid ops and random bodies
for i in range(2000):
    op = random.randint(2, 23)
    if op in (8, 11, 20, 21, 22):	# waits and the notification: no immediate reply
        continue
    try:
        status(s, struct.pack("<II", op, 0) + os.urandom(REQ - 8))
    except (socket.timeout, OSError):
        s = conn(); hello(s)
s.close()
# 4. connect and vanish, many times
for i in range(50):
    conn().close()
sys.exit(1 if bad else 0)
