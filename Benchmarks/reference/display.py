#!/usr/bin/env python3
"""Display-size decoding with best-of-breed C code, as a yardstick for
`asyncimage-bench loader --workloads display`.

For each photo of the loader set (read into memory first), two ways to get a
256x256 aspect-fill thumbnail with Pillow (libjpeg-turbo and Pillow's C
resampler):

  scaled: Image.draft() (libjpeg's DCT scaling to the smallest scale still
          covering the target), then resize to the fill size: what
          AsyncImageKit does;
  full:   a full-size decode, then the same resize: what the loader
          benchmark's peer must do.

It prints CPU milliseconds per image (process time, one thread) and the ratio
full/scaled: how much a scaled decode can gain over a full one when both use
fast C code. Optionally the same for libvips' `vipsthumbnail` (one thread).

    pip install pillow          # and optionally: apt-get install libvips-tools
    python3 Benchmarks/reference/display.py [--count 200] [--repeats 3]
"""
import argparse
import glob
import io
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from PIL import Image, features

TARGET = 256


def fill_size(width, height):
    scale = max(TARGET / width, TARGET / height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def scaled(data):
    with Image.open(io.BytesIO(data)) as image:
        size = fill_size(*image.size)
        image.draft("RGB", size)
        return image.convert("RGB").resize(size, Image.Resampling.BOX)


def full(data):
    with Image.open(io.BytesIO(data)) as image:
        size = fill_size(*image.size)
        return image.convert("RGB").resize(size, Image.Resampling.BOX)


def cpu_ms_per_image(function, bodies):
    start = time.process_time()
    for data in bodies:
        function(data).tobytes()
    return (time.process_time() - start) * 1000 / len(bodies)


def vips_ms_per_image(paths):
    with tempfile.TemporaryDirectory() as out:
        env = dict(os.environ, VIPS_CONCURRENCY="1")
        before = os.times()
        subprocess.run(
            ["vipsthumbnail", *paths, "--size", f"{TARGET}x{TARGET}", "--smartcrop", "centre", "-o", f"{out}/%s.png"],
            check=True, env=env, stdout=subprocess.DEVNULL)
        after = os.times()
        cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
        return cpu * 1000 / len(paths)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--set", default="bench-output/loader-set", help="the loader benchmark's photos")
    parser.add_argument("--count", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    paths = [os.path.join(args.set, f"photo-{i}.jpg") for i in range(args.count)]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        sys.exit(f"{missing[0]} is missing: run `asyncimage-bench loader --count {args.count}` first")
    bodies = [open(p, "rb").read() for p in paths]
    print(f"{args.count} photos, {sum(map(len, bodies)) / 1e6:.0f} MB; Pillow {Image.__version__}, "
          f"libjpeg-turbo {features.version('libjpeg_turbo')}; median of {args.repeats}, one thread", flush=True)
    rows = {"scaled": [], "full": [], "vips": []}
    has_vips = shutil.which("vipsthumbnail") is not None
    for _ in range(args.repeats):  # alternate, so drift hits every row alike
        rows["scaled"].append(cpu_ms_per_image(scaled, bodies))
        rows["full"].append(cpu_ms_per_image(full, bodies))
        if has_vips:
            rows["vips"].append(vips_ms_per_image(paths))
    s, f = statistics.median(rows["scaled"]), statistics.median(rows["full"])
    print(f"Pillow, DCT-scaled decode + box resize   {s:6.1f} CPU ms/image")
    print(f"Pillow, full decode + box resize        {f:6.1f} CPU ms/image   full/scaled {f / s:.2f}x")
    if has_vips:
        v = statistics.median(rows["vips"])
        print(f"vipsthumbnail, centre crop (1 thread)   {v:6.1f} CPU ms/image (reads files, writes PNGs)")


if __name__ == "__main__":
    main()
