#!/usr/bin/env python3
"""Generates the service benchmark's 200 JPEG sources (1-12 MP).

    python3 sources.py [DIR] [--count 200] [--seed 28]

Photographic-ish content, so that decoding and encoding cost what they cost
on photos: a smooth low-frequency colour field (a small random grid scaled
up bicubically), a vignette, a few dozen soft shapes, and sensor-like noise
(a 512x512 Gaussian tile, tiled at a random offset per image). Sizes are
uniform in 1-12 MP over nine aspect ratios (landscape, portrait, square,
panorama); every 8th image is progressive, and 8 of the 200 carry an EXIF
Orientation other than 1 (3, 6 or 8), so a service that respects it must
rotate them. Quality 88-94, 4:2:0, as a camera or phone would write.

Deterministic for a seed (numpy's PCG64 and Python's random, no clock). The
manifest (DIR/manifest.json: name, width, height, bytes, orientation,
progressive for every file) is written last; when it is present with the same
count, seed and version, nothing is generated again (the cache).

Needs Pillow and numpy (the `run` script provides them in a venv under /tmp).
"""

import argparse
import json
import math
import os
import random
import sys
import time

import numpy as np
from PIL import Image, ImageChops, ImageDraw

VERSION = 1
ASPECTS = [(4, 3), (3, 2), (16, 9), (1, 1), (3, 4), (2, 3), (9, 16), (5, 4), (21, 9)]
ORIENTATIONS = [6, 8, 3]


def plan(count, seed):
    """The list of (name, width, height, orientation, progressive, quality)."""
    rnd = random.Random(seed)
    specs = []
    # Megapixels spread evenly over 1..12 then shuffled, so the set always
    # spans the whole range (not left to chance at 200 draws).
    mps = [1.0 + 11.0 * (i + rnd.random()) / count for i in range(count)]
    rnd.shuffle(mps)
    exif_every = max(1, count // 8)
    for i in range(count):
        aw, ah = ASPECTS[rnd.randrange(len(ASPECTS))]
        pixels = mps[i] * 1_000_000
        w = int(round(math.sqrt(pixels * aw / ah) / 2)) * 2
        h = int(round(pixels / w / 2)) * 2
        orientation = ORIENTATIONS[(i // exif_every) % 3] if i % exif_every == exif_every // 2 else 1
        progressive = i % 8 == 3
        quality = rnd.choice([88, 90, 92, 94])
        specs.append((f"src{i:03d}.jpg", w, h, orientation, progressive, quality))
    return specs


def make_noise_tile(rng, size=512):
    """Texture plus sensor noise, centred on 128: a 64x64 random field scaled
    up (mid frequencies, +-24) plus Gaussian grain (sigma 6), per channel."""
    tex = rng.normal(0, 12, size=(size // 8, size // 8)).astype(np.float32)
    tex_img = Image.fromarray(np.clip(tex + 128, 0, 255).astype(np.uint8), "L").resize((size, size), Image.BICUBIC)
    tex = np.asarray(tex_img, dtype=np.int16)[:, :, None] - 128
    grain = rng.normal(0, 6, size=(size, size, 3))
    return Image.fromarray(np.clip(128 + tex + grain, 0, 255).astype(np.uint8), "RGB")


def render(w, h, rng, noise_tile):
    """One picture, drawn at half size and scaled up (soft edges, as a lens
    gives), then the vignette and the tiled texture and grain at full size;
    Pillow's C operations throughout, so 12 MP takes well under a second."""
    hw, hh = max(2, w // 2), max(2, h // 2)
    gw, gh = int(rng.integers(4, 9)), int(rng.integers(4, 9))
    base = rng.uniform(30, 240, size=(gh, gw, 3)).astype(np.uint8)
    field = Image.fromarray(base, "RGB").resize((hw, hh), Image.BICUBIC)
    draw = ImageDraw.Draw(field)
    for _ in range(int(rng.integers(15, 40))):
        x0, y0 = int(rng.integers(-hw // 8, hw)), int(rng.integers(-hh // 8, hh))
        sw = int(rng.integers(max(2, hw // 40), max(3, hw // 3)))
        sh = int(rng.integers(max(2, hh // 40), max(3, hh // 3)))
        color = tuple(int(c) for c in rng.integers(10, 250, size=3))
        kind = int(rng.integers(0, 3))
        if kind == 0:
            draw.ellipse([x0, y0, x0 + sw, y0 + sh], fill=color)
        elif kind == 1:
            draw.rectangle([x0, y0, x0 + sw, y0 + sh], fill=color)
        else:
            pts = [(x0 + int(rng.integers(0, sw)), y0 + int(rng.integers(0, sh))) for _ in range(5)]
            draw.polygon(pts, fill=color)
    img = field.resize((w, h), Image.BILINEAR)
    # Vignette: a small radial mask scaled up, multiplied in.
    yy, xx = np.mgrid[-1:1:64j, -1:1:64j]
    vig = Image.fromarray((255 * (1 - 0.3 * (xx ** 2 + yy ** 2) / 2)).astype(np.uint8), "L")
    img = ImageChops.multiply(img, vig.resize((w, h), Image.BILINEAR).convert("RGB"))
    # Texture and grain: the tile pasted over a full-size layer at a random offset.
    tw, th = noise_tile.size
    ox, oy = int(rng.integers(0, tw)), int(rng.integers(0, th))
    layer = Image.new("RGB", (w, h))
    for y in range(-oy, h, th):
        for x in range(-ox, w, tw):
            layer.paste(noise_tile, (x, y))
    return ImageChops.add(img, layer, scale=1.0, offset=-128)


def exif_bytes(orientation):
    exif = Image.Exif()
    exif[0x0112] = orientation  # Orientation
    exif[0x010F] = "svcbench"  # Make
    return exif.tobytes()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir", nargs="?", default="/tmp/svcbench-sources")
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seed", type=int, default=28)
    args = ap.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    manifest_path = os.path.join(args.dir, "manifest.json")
    if os.path.exists(manifest_path):
        try:
            with open(manifest_path) as f:
                m = json.load(f)
            if (m.get("version"), m.get("seed"), len(m.get("files", []))) == (VERSION, args.seed, args.count) and all(
                os.path.getsize(os.path.join(args.dir, e["name"])) == e["bytes"] for e in m["files"]
            ):
                print(f"sources: {args.count} present in {args.dir} (cached)")
                return 0
        except (OSError, ValueError, KeyError):
            pass

    t0 = time.monotonic()
    rng = np.random.default_rng(args.seed)
    noise_tile = make_noise_tile(rng)
    files = []
    total = 0
    for i, (name, w, h, orientation, progressive, quality) in enumerate(plan(args.count, args.seed)):
        img = render(w, h, np.random.default_rng([args.seed, i]), noise_tile)
        kwargs = dict(quality=quality, subsampling="4:2:0", progressive=progressive, optimize=False)
        if orientation != 1:
            kwargs["exif"] = exif_bytes(orientation)
        path = os.path.join(args.dir, name)
        img.save(path + ".part", "JPEG", **kwargs)
        os.replace(path + ".part", path)
        size = os.path.getsize(path)
        total += size
        files.append(dict(name=name, width=w, height=h, megapixels=round(w * h / 1e6, 2), bytes=size,
                          orientation=orientation, progressive=progressive, quality=quality))
        if (i + 1) % 25 == 0:
            print(f"  {i + 1}/{args.count}  {total / 1e6:.0f} MB  {time.monotonic() - t0:.0f} s", flush=True)
    with open(manifest_path + ".part", "w") as f:
        json.dump(dict(version=VERSION, seed=args.seed, files=files), f, indent=1)
    os.replace(manifest_path + ".part", manifest_path)
    print(f"sources: {args.count} JPEGs, {total / 1e6:.0f} MB, in {args.dir} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
