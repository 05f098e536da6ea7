#!/usr/bin/env python3
"""Fetch chosen files out of a wheel on PyPI without downloading the whole wheel.

    tools/dev/fetch_wheel.py PROJECT VERSION PLATFORM --list
    tools/dev/fetch_wheel.py PROJECT VERSION PLATFORM MEMBER_GLOB ...

A wheel is a zip file. This reads its end-of-central-directory record and its central directory
with HTTP Range requests, then, for each member whose path matches a glob (fnmatch, `*` also
crosses `/`), only that member's local header and compressed bytes (stored or deflate; zip64 is
understood). The wheel's URL comes from the PyPI JSON API; PLATFORM picks the wheel whose
platform tag contains it, where the tag is also tried with its manylinux glibc version removed
(so `manylinux_x86_64` matches `manylinux2014_x86_64` and `manylinux_2_27_x86_64`).

--list prints every member as `uncompressed-size compressed-size path`. Otherwise the members are
written to ${INFER_WHEEL_CACHE:-~/.cache/infer/wheels}/PROJECT-VERSION-PLATFORM/<member path>,
each checked against the sha256 in the wheel's *.dist-info/RECORD (which is fetched and cached
too), written atomically and without the exec bit, and their paths printed one per line. Members
already in the cache that match the cached RECORD are not fetched again, so a second run needs no
network. Exit status: 0 done, 2 bad arguments (or no such project, version, wheel or member),
3 network failure (one line on stderr), 4 hash or size mismatch. -v reports the bytes downloaded
on stderr; INFER_PYPI_URL replaces the JSON API base (default https://pypi.org/pypi/).
"""
import argparse, atexit, base64, csv, fnmatch, hashlib, http.client, io, json, os, re, ssl, struct, sys
import tempfile, urllib.error, urllib.request, zlib
from urllib.parse import urljoin

INDEX = os.environ.get("INFER_PYPI_URL", "https://pypi.org/pypi/")
TIMEOUT = 60
downloaded = 0  # bytes received over the network, reported with -v


class Fail(Exception):
    def __init__(self, code, msg):
        super().__init__(msg)
        self.code = code


def get(url, start=None, end=None):
    """Open url (bytes start..end inclusive; end None = to the end, start<0 = the last -start)."""
    req = urllib.request.Request(url, headers={"User-Agent": "infer-fetch-wheel"})
    if start is not None:
        req.add_header("Range", f"bytes={start}" if start < 0 else f"bytes={start}-{'' if end is None else end}")
    try:
        resp = urllib.request.urlopen(req, timeout=TIMEOUT)
    except urllib.error.HTTPError as e:
        if e.code == 404:
            raise Fail(2, f"not found: {url}")
        raise Fail(3, f"HTTP {e.code} from {url}")
    if start is not None and resp.status != 206:
        raise Fail(3, f"{url}: the server ignored the Range request (HTTP {resp.status})")
    return resp


def read(resp, n=None):
    global downloaded
    data = resp.read() if n is None else resp.read(n)
    downloaded += len(data)
    if n is not None and len(data) != n:
        raise Fail(3, "connection closed early")
    return data


def wheel_url(project, version, platform):
    try:  # the per-version document; some mirrors only serve the project's, so fall back to it
        files = json.load(get(url := urljoin(INDEX, f"{project}/{version}/json")))["urls"]
    except Fail as e:
        if e.code != 2:
            raise
        files = json.load(get(url := urljoin(INDEX, f"{project}/json")))["releases"].get(version)
        if not files:
            raise Fail(2, f"{project} has no version {version} on {INDEX}")
    for f in files:
        tag = f["filename"][:-4].split("-")[-1] if f["filename"].endswith(".whl") else ""
        if tag and (platform in tag or platform in re.sub(r"manylinux(\d+|_\d+_\d+)", "manylinux", tag)):
            return urljoin(url, f["url"]), f["size"]
    raise Fail(2, f"no {project} {version} wheel for platform {platform}: "
                  + ", ".join(f["filename"] for f in files))


def central_directory(url, size):
    """Return [(name, method, csize, usize, local header offset, end of its bytes)]."""
    tail = read(get(url, -min(size, 65536 + 22)))
    at = tail.rfind(b"PK\x05\x06")
    if at < 0:
        raise Fail(3, "no end-of-central-directory record: not a zip, or a truncated answer")
    count, cd_size, cd_off = struct.unpack_from("<10xHLL", tail, at)
    if 0xFFFFFFFF in (cd_size, cd_off) or count == 0xFFFF:  # zip64: locator just before the EOCD
        z64 = struct.unpack_from("<4sLQL", tail, at - 20)[2]
        rec = read(get(url, z64, z64 + 55))
        count, cd_size, cd_off = struct.unpack_from("<32xQQQ", rec)
    cd = read(get(url, cd_off, cd_off + cd_size - 1))
    entries, p = [], 0
    for _ in range(count):
        (sig, method, csize, usize, nlen, elen, clen, off) = struct.unpack_from("<4s6xH8xLLHHH8xL", cd, p)
        if sig != b"PK\x01\x02":
            raise Fail(3, "corrupt central directory")
        name = cd[p + 46:p + 46 + nlen].decode("utf-8")
        extra, q = cd[p + 46 + nlen:p + 46 + nlen + elen], 0
        while q + 4 <= len(extra):  # the zip64 extra field holds the fields saturated above
            hid, hlen = struct.unpack_from("<HH", extra, q)
            if hid == 1:
                vals = list(struct.unpack_from(f"<{hlen // 8}Q", extra, q + 4))
                usize = vals.pop(0) if usize == 0xFFFFFFFF else usize
                csize = vals.pop(0) if csize == 0xFFFFFFFF else csize
                off = vals.pop(0) if off == 0xFFFFFFFF else off
            q += 4 + hlen
        entries.append([name, method, csize, usize, off])
        p += 46 + nlen + elen + clen
    ends = sorted(e[4] for e in entries) + [cd_off]
    for e in entries:
        e.append(ends[ends.index(e[4]) + 1] - 1)
    return entries


def extract(url, entry, out):
    """Stream one member into the open file out; return its sha256 (hexdigest) and size."""
    name, method, csize, usize, off, end = entry
    if method not in (0, 8):
        raise Fail(3, f"{name}: compression method {method} is not stored or deflate")
    resp = get(url, off, end)
    sig, nlen, elen = struct.unpack("<4s22xHH", read(resp, 30))
    if sig != b"PK\x03\x04":
        raise Fail(3, f"{name}: bad local header")
    read(resp, nlen + elen)
    h, n, left = hashlib.sha256(), 0, csize
    inflate = zlib.decompressobj(-15) if method == 8 else None
    while left:
        chunk = read(resp, min(left, 1 << 20))
        left -= len(chunk)
        data = chunk if not inflate else inflate.decompress(chunk) + (b"" if left else inflate.flush())
        h.update(data)
        out.write(data)
        n += len(data)
    return h.hexdigest(), n


def write_atomic(path, fill):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".part-")
    try:
        with os.fdopen(fd, "wb") as f:
            result = fill(f)
        os.chmod(tmp, 0o644)
        return result, tmp
    except BaseException:
        os.unlink(tmp)
        raise


def parse_record(text):
    """RECORD rows -> {path: (sha256 hexdigest or None, size or None)}."""
    rows = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 3 and row[0]:
            algo, _, b64 = row[1].partition("=")
            digest = base64.urlsafe_b64decode(b64 + "=" * (-len(b64) % 4)).hex() if algo == "sha256" else None
            rows[row[0]] = (digest, int(row[2]) if row[2] else None)
    return rows


def file_sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("project"), ap.add_argument("version"), ap.add_argument("platform")
    ap.add_argument("--list", action="store_true", help="print the members and their sizes")
    ap.add_argument("-v", "--verbose", action="store_true", help="bytes downloaded, on stderr")
    ap.add_argument("globs", nargs="*", metavar="MEMBER_GLOB")
    a = ap.parse_args(argv)
    if a.verbose:
        atexit.register(lambda: print(f"fetch_wheel: {downloaded} bytes downloaded", file=sys.stderr))
    if not a.list and not a.globs:
        ap.error("give --list or at least one MEMBER_GLOB")
    cache = os.path.join(os.environ.get("INFER_WHEEL_CACHE") or os.path.expanduser("~/.cache/infer/wheels"),
                         f"{a.project}-{a.version}-{a.platform}")
    dest = lambda n: os.path.join(cache, *n.split("/"))
    wheel = {}  # url and entries, filled on first use: a fully cached request needs no network

    def entries():
        if not wheel:
            wheel["url"], size = wheel_url(a.project, a.version, a.platform)
            wheel["entries"] = {e[0]: e for e in central_directory(wheel["url"], size)}
        return wheel["entries"]

    def fetch(n):
        return write_atomic(dest(n), lambda f: extract(wheel["url"], entries()[n], f))

    if a.list:
        for e in entries().values():
            print(f"{e[3]:12d} {e[2]:12d} {e[0]}")
        return 0
    cached = [f"{d}/RECORD" for d in (os.listdir(cache) if os.path.isdir(cache) else [])
              if d.endswith(".dist-info") and os.path.isfile(dest(f"{d}/RECORD"))]
    record_name = cached[0] if cached else next(
        (n for n in entries() if re.fullmatch(r"[^/]+\.dist-info/RECORD", n)), None)
    if record_name is None:
        raise Fail(3, "the wheel has no *.dist-info/RECORD")
    if not cached:
        os.replace(fetch(record_name)[1], dest(record_name))
    with open(dest(record_name), encoding="utf-8") as f:
        record = parse_record(f.read())
    wanted = []
    for g in a.globs:
        hits = [n for n in dict.fromkeys([*record, record_name]) if fnmatch.fnmatchcase(n, g)]
        if not hits:
            raise Fail(2, f"no member of {a.project} {a.version} {a.platform} matches {g!r}")
        wanted += [n for n in hits if n not in wanted]
    for n in wanted:
        if n.startswith("/") or ".." in n.split("/"):
            raise Fail(4, f"{n}: the member path leaves the cache folder")
        if n != record_name:
            digest, size = record[n]
            if digest is None:
                raise Fail(4, f"{n}: no sha256 in {record_name}")
            if not (os.path.isfile(dest(n)) and file_sha256(dest(n)) == digest):
                if n not in entries():
                    raise Fail(4, f"{n} is in {record_name} but not in the wheel")
                (got, got_size), tmp = fetch(n)
                if got != digest or (size is not None and got_size != size):
                    os.unlink(tmp)
                    raise Fail(4, f"{n}: sha256 {got} ({got_size} bytes) does not match {record_name}: "
                                  f"{digest} ({size} bytes)")
                os.replace(tmp, dest(n))
        print(dest(n))
    return 0


if __name__ == "__main__":
    try:
        code = main(sys.argv[1:])
    except Fail as e:
        print(f"fetch_wheel: {e}", file=sys.stderr)
        code = e.code
    except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError,
            ssl.SSLError, zlib.error) as e:
        print(f"fetch_wheel: network failure: {type(e).__name__}: {e}", file=sys.stderr)
        code = 3
    sys.exit(code)
