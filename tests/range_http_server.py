"""A static HTTP server that answers byte-range requests (206), as object
stores' HTTP front ends and CDNs do, for neardup's HTTP input tests.
Python's own http.server ignores Range.

    python range_http_server.py DIR PORT [FAIL_EVERY [GONE_FROM]]

With FAIL_EVERY = n, every n-th request gets 503 Service Unavailable, a
transient error a client must retry. With GONE_FROM = b, a range starting
at byte b or later gets 404, as if the file went away while being read.
"""
import http.server
import os
import re
import sys
import threading


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    fail_every = 0
    gone_from = None
    requests = 0
    lock = threading.Lock()

    def send_head(self):
        with RangeHandler.lock:
            RangeHandler.requests += 1
            failing = self.fail_every and RangeHandler.requests % self.fail_every == 0
        if failing:
            self.send_error(503, "try again")
            return None
        path = self.translate_path(self.path)
        if not os.path.isfile(path):
            self.send_error(404, "not found")
            return None
        size = os.path.getsize(path)
        match = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range", ""))
        f = open(path, "rb")
        if match is None:
            self.send_response(200)
            start, end = 0, size - 1
        else:
            start = int(match.group(1))
            if self.gone_from is not None and start >= self.gone_from:
                f.close()
                self.send_error(404, "gone")
                return None
            end = min(int(match.group(2)), size - 1) if match.group(2) else size - 1
            if start >= size:
                f.close()
                self.send_error(416, "range not satisfiable")
                return None
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        self.send_header("Content-Type", "application/octet-stream")
        self.send_header("Content-Length", str(end - start + 1))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Last-Modified", self.date_time_string(int(os.path.getmtime(path))))
        self.end_headers()
        f.seek(start)
        self.remaining = end - start + 1
        return f

    def copyfile(self, source, outputfile):
        while self.remaining > 0:
            chunk = source.read(min(65536, self.remaining))
            if not chunk:
                break
            outputfile.write(chunk)
            self.remaining -= len(chunk)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    directory, port = sys.argv[1], int(sys.argv[2])
    RangeHandler.fail_every = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    RangeHandler.gone_from = int(sys.argv[4]) if len(sys.argv) > 4 else None
    handler = lambda *a, **k: RangeHandler(*a, directory=directory, **k)
    http.server.ThreadingHTTPServer(("127.0.0.1", port), handler).serve_forever()
