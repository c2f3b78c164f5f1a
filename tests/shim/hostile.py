#!/usr/bin/env python3
# tests/shim/hostile.py SOCKET CASE [ARG] - a raw-protocol client that does to
# the fabric daemon what a broken or hostile program could
# (tests/interop/shim_hostile.sh runs each case and checks the daemon and
# the other programs afterwards). Prints "ok ..." or "FAIL ..." lines and
# exits 1 on any FAIL. The protocol's layout and numbers come from
# shim/shim_proto.h, read at run time ($IBFAB_SRC).
#
#   clock         the clock page it is sent cannot be resized, written by
#                 pwrite or mapped writable: nobody can forge the time
#   segment       a memory segment that is not sealed against shrinking
#                 is refused; a sealed one is taken and cannot shrink
#   eventfd       a completion channel's or the async fd that is a pipe is
#                 refused (the daemon writes to them: a pipe nobody reads
#                 would block it); an eventfd is taken
#   forge-pid     HELLO with pid 1: the daemon logs the kernel's pid
#   idle SECONDS  HELLO, then silence: reports whether the daemon cut it off
#   silent        connect and say nothing: must be dropped within 10 s
#   flood N       N requests as fast as it can send, replies never read
import fcntl, mmap, os, re, socket, struct, sys, time

path, case = sys.argv[1], sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else None
hdr = open(os.path.join(os.environ["IBFAB_SRC"], "shim/shim_proto.h")).read()
MAGIC = int(re.search(r"#define SHIM_MAGIC\s+(0x[0-9a-fA-F]+)", hdr).group(1), 16)
VERSION = int(re.search(r"#define SHIM_VERSION\s+(\d+)", hdr).group(1))
ops = re.search(r"enum shim_op \{(.*?)\};", hdr, re.S).group(1)
OP = {}
n = 0
for m in re.finditer(r"SHIM_OP_(\w+)(\s*=\s*(\d+))?", ops):
    n = int(m.group(3)) if m.group(3) else n + 1
    OP[m.group(1)] = n
REQ = 96
bad = 0


def fail(msg):
    global bad
    print("FAIL " + msg)
    bad += 1


def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.settimeout(10)
    s.connect(path)
    return s


def recv_fd(s):
    msg, anc, _, _ = s.recvmsg(1024, socket.CMSG_SPACE(4))
    fd = -1
    for lvl, typ, data in anc:
        if lvl == socket.SOL_SOCKET and typ == socket.SCM_RIGHTS:
            fd = struct.unpack("<i", data[:4])[0]
    return struct.unpack("<i", msg[:4])[0], fd


def hello(s, pid=None, host=b""):
    body = struct.pack("<IIIII64s", OP["HELLO"], 0, MAGIC, VERSION,
                       os.getpid() if pid is None else pid, host)
    s.send(body.ljust(REQ, b"\0"))
    st, fd = recv_fd(s)
    if st:
        fail("HELLO refused: errno %d" % st)
    return fd


def seg_add(s, fd, length):
    body = struct.pack("<IIQQ", OP["SEG_ADD"], 0, 0x10000000, length).ljust(REQ, b"\0")
    s.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("<i", fd))])
    return struct.unpack("<i", s.recv(1024)[:4])[0]


def send_fd(s, op, fd):
    body = struct.pack("<II", OP[op], 0).ljust(REQ, b"\0")
    s.sendmsg([body], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("<i", fd))])
    return struct.unpack("<i", s.recv(1024)[:4])[0]


def expect_oserror(what, fn):
    try:
        fn()
    except OSError as e:
        print("ok   %s refused: %s" % (what, os.strerror(e.errno)))
        return
    fail("%s was allowed" % what)


if case == "clock":
    s = conn()
    cfd = hello(s)
    page = mmap.mmap(cfd, 4096, mmap.MAP_SHARED, mmap.PROT_READ)
    before = page[:16]
    expect_oserror("ftruncate(clock, 0)", lambda: os.ftruncate(cfd, 0))
    expect_oserror("ftruncate(clock, 1 MiB)", lambda: os.ftruncate(cfd, 1 << 20))
    expect_oserror("pwrite(clock, now_ps = 2^63)",
                   lambda: os.pwrite(cfd, struct.pack("<Q", 1 << 63), 0))
    expect_oserror("mmap(clock, PROT_WRITE)",
                   lambda: mmap.mmap(cfd, 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
    # through /proc, a read-write reopening of the same memfd
    def reopen():
        fd = os.open("/proc/self/fd/%d" % cfd, os.O_RDWR)
        try:
            os.pwrite(fd, struct.pack("<Q", 1 << 63), 0)
        finally:
            os.close(fd)
    expect_oserror("pwrite through /proc/self/fd", reopen)
    if page[:16] != before:
        fail("the clock page changed under a client that only read it")
    else:
        print("ok   the clock page is as the daemon wrote it")
elif case == "segment":
    s = conn()
    hello(s)
    plain = os.memfd_create("hostile", 0)
    os.ftruncate(plain, 1 << 16)
    st = seg_add(s, plain, 1 << 16)
    if st == 0:
        fail("an unsealed memfd was taken as a segment: shrinking it would SIGBUS the daemon")
    else:
        print("ok   unsealed segment refused (errno %d)" % st)
    f = open(os.path.join(os.environ.get("TMPDIR", "/tmp"), "hostile-seg-%d" % os.getpid()), "w+b")
    f.truncate(1 << 16)
    st = seg_add(s, f.fileno(), 1 << 16)
    os.unlink(f.name)
    if st == 0:
        fail("a regular file was taken as a segment")
    else:
        print("ok   regular-file segment refused (errno %d)" % st)
    sealed = os.memfd_create("hostile", os.MFD_ALLOW_SEALING)
    os.ftruncate(sealed, 1 << 16)
    fcntl.fcntl(sealed, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    st = seg_add(s, sealed, 1 << 16)
    if st:
        fail("a sealed segment was refused: errno %d" % st)
    else:
        print("ok   sealed segment taken")
    expect_oserror("shrinking the sealed segment", lambda: os.ftruncate(sealed, 0))
    short = os.memfd_create("hostile", os.MFD_ALLOW_SEALING)
    os.ftruncate(short, 4096)
    fcntl.fcntl(short, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    st = seg_add(s, short, 1 << 16)
    if st == 0:
        fail("a segment shorter than it claims was taken")
    else:
        print("ok   segment shorter than its length refused (errno %d)" % st)
elif case == "eventfd":
    s = conn()
    hello(s)
    rd, wr = os.pipe()
    efd = os.eventfd(0) if hasattr(os, "eventfd") else None
    for name in ("CREATE_CHANNEL", "ASYNC_FD"):
        st = send_fd(s, name, wr)
        if st == 0:
            fail("%s took a pipe: a full one would block the daemon" % name)
        else:
            print("ok   %s refused a pipe (errno %d)" % (name, st))
        if efd is not None:
            st = send_fd(s, name, efd)
            if st:
                fail("%s refused an eventfd: errno %d" % (name, st))
            else:
                print("ok   %s took an eventfd" % name)
elif case == "forge-pid":
    s = conn()
    hello(s, pid=1)
    print("ok   attached as pid %d claiming pid 1" % os.getpid())
    time.sleep(0.2)
elif case == "idle":
    s = conn()
    hello(s, host=b"h3")
    print("ok   attached as pid %d, now silent" % os.getpid())
    sys.stdout.flush()
    s.settimeout(float(arg))
    try:
        r = s.recv(1024)
        print("detached" if not r else "a message it did not ask for")
    except socket.timeout:
        print("still attached")
    except OSError:
        print("detached")
elif case == "silent":
    s = conn()
    t0 = time.monotonic()
    s.settimeout(10)
    try:
        r = s.recv(1024)
        dt = time.monotonic() - t0
        if r:
            fail("a reply to nothing")
        else:
            print("ok   dropped after %.1f s without a HELLO" % dt)
    except socket.timeout:
        fail("still connected 10 s after saying nothing")
elif case == "flood":
    s = conn()
    hello(s)
    s.setblocking(False)
    sent = 0
    body = struct.pack("<II", OP["CREATE_CQ"], 0) + struct.pack("<Ii", 64, -1)
    body = body.ljust(REQ, b"\0")
    t0 = time.monotonic()
    while sent < int(arg) and time.monotonic() - t0 < 20:
        try:
            s.send(body)
            sent += 1
        except BlockingIOError:
            time.sleep(0.001)
        except OSError:
            break
    print("ok   sent %d requests without reading a reply" % sent)
else:
    fail("unknown case " + case)
sys.exit(1 if bad else 0)
