#!/usr/bin/python3
"""remote_shell.py - a minimal remote shell between the two rxe guests, for
Open MPI's rsh launcher (plm_rsh_agent) where the guests have no ssh.

  remote_shell.py serve ADDR SECONDS        run commands sent to ADDR until a client
                                            sends --quit or SECONDS pass
  remote_shell.py HOST COMMAND...           run COMMAND (joined by spaces, given to
                                            sh -c) on HOST's server, relay its output,
                                            exit with its status (what ssh does)
  remote_shell.py --quit HOST               stop HOST's server

The port is REMOTE_SHELL_PORT (default 18700).  Only for the guests of
tests/verbs/two_guests.sh: no authentication, a private emulated link.
Frames on the socket: 4-byte big-endian length + bytes; the server ends with
a frame of length 0xffffffff followed by the 4-byte exit status.
"""
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

END = 0xFFFFFFFF


def port():
    return int(os.environ.get("REMOTE_SHELL_PORT", "18700"))


def recv_exact(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def serve_one(conn, stop):
    with conn:
        length = struct.unpack(">I", recv_exact(conn, 4))[0]
        argv = json.loads(recv_exact(conn, length))
        if argv == ["--quit"]:
            stop.set()
            return
        proc = subprocess.Popen(["sh", "-c", " ".join(argv)], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for chunk in iter(lambda: proc.stdout.read1(65536), b""):
            conn.sendall(struct.pack(">I", len(chunk)) + chunk)
        status = proc.wait()
        conn.sendall(struct.pack(">II", END, status & 0xFF if status >= 0 else 128 - status))


def serve(addr, seconds):
    stop = threading.Event()
    srv = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind((addr, port()))
    srv.listen(8)
    srv.settimeout(0.5)
    deadline = time.monotonic() + seconds
    while not stop.is_set():
        if time.monotonic() > deadline:
            print("remote_shell: no --quit within %d s" % seconds, file=sys.stderr)
            return 1
        try:
            conn, _ = srv.accept()
        except socket.timeout:
            continue
        threading.Thread(target=serve_one, args=(conn, stop), daemon=True).start()
    return 0


def connect(host, deadline_s=60):
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            return socket.create_connection((host, port()), timeout=5)
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def run(host, argv):
    sock = connect(host)
    sock.settimeout(None)
    data = json.dumps(argv).encode()
    sock.sendall(struct.pack(">I", len(data)) + data)
    if argv == ["--quit"]:
        return 0
    out = sys.stdout.buffer
    while True:
        length = struct.unpack(">I", recv_exact(sock, 4))[0]
        if length == END:
            return struct.unpack(">I", recv_exact(sock, 4))[0]
        out.write(recv_exact(sock, length))
        out.flush()


def main(args):
    if len(args) == 3 and args[0] == "serve":
        return serve(args[1], float(args[2]))
    if len(args) == 2 and args[0] == "--quit":
        return run(args[1], ["--quit"])
    if len(args) >= 2:
        return run(args[0], args[1:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
