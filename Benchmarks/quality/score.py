#!/usr/bin/env python3
"""Thumbnail quality for `asyncimage-bench quality`: the Pillow peer, the
reference, and the scores.

Each candidate (a folder of PNGs named PHOTO-SIZE.png, with a cpu.json of
CPU milliseconds per PHOTO-SIZE) is scored against a reference made at the
candidate's own output size: the photo decoded at full size by Pillow
(libjpeg-turbo), converted to linear light (the sRGB curve, in float), resized
with Pillow's Lanczos3 per channel in 32-bit float, and encoded back to 8-bit
sRGB. Scores: SSIMULACRA2 (PyPI `ssimulacra2`; higher is better, 90 and up is
visually lossless) and SSIM on luma (7x7 uniform window).

Pillow's own `thumbnail()` (draft to a DCT scale with reducing_gap 2, then
Lanczos on the gamma-encoded values) is timed here, in-process, from bytes in
memory, best of RUNS, thread CPU time: it joins the candidates as "Pillow".

    python3 score.py --photos P1.jpg P2.jpg --sizes 256 512 --runs 3 \
        --out DIR --candidate "AsyncImageKit high=DIR/high" --candidate ...

Prints a Markdown table per size and writes DIR/quality.svg (quality against
CPU) and DIR/scores.json.
"""
import argparse
import io
import json
import os
import statistics
import sys
import time

import numpy as np
from PIL import Image
from scipy.ndimage import uniform_filter
from ssimulacra2 import compute_ssimulacra2


def to_linear(srgb8):
    c = srgb8.astype(np.float32) / 255.0
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4).astype(np.float32)


def to_srgb8(linear):
    l = np.clip(linear, 0.0, 1.0)
    c = np.where(l <= 0.0031308, l * 12.92, 1.055 * np.power(l, 1 / 2.4) - 0.055)
    return np.clip(np.round(c * 255.0), 0, 255).astype(np.uint8)


def reference(full_linear, size):
    """The full decode resized to `size` with Lanczos3 in linear light."""
    channels = [
        np.asarray(Image.fromarray(full_linear[:, :, k], mode="F").resize(size, Image.LANCZOS))
        for k in range(3)
    ]
    return Image.fromarray(to_srgb8(np.stack(channels, axis=2)), mode="RGB")


def ssim_luma(a, b):
    def luma(im):
        x = np.asarray(im.convert("RGB"), dtype=np.float64)
        return 0.2126 * x[:, :, 0] + 0.7152 * x[:, :, 1] + 0.0722 * x[:, :, 2]

    x, y = luma(a), luma(b)
    c1, c2 = (0.01 * 255) ** 2, (0.03 * 255) ** 2
    mx, my = uniform_filter(x, 7), uniform_filter(y, 7)
    sxx = uniform_filter(x * x, 7) - mx * mx
    syy = uniform_filter(y * y, 7) - my * my
    sxy = uniform_filter(x * y, 7) - mx * my
    s = ((2 * mx * my + c1) * (2 * sxy + c2)) / ((mx * mx + my * my + c1) * (sxx + syy + c2))
    return float(s[3:-3, 3:-3].mean())


def pillow_thumbnails(photos, sizes, runs, folder):
    os.makedirs(folder, exist_ok=True)
    cpu = {}
    for path in photos:
        data = open(path, "rb").read()
        name = os.path.basename(path)
        for size in sizes:
            best, kept = float("inf"), None
            for _ in range(runs):
                start = time.thread_time()
                im = Image.open(io.BytesIO(data))
                im.thumbnail((size, size))  # reducing_gap 2.0, LANCZOS: Pillow's defaults
                im.load()
                spent = (time.thread_time() - start) * 1000
                if spent < best:
                    best, kept = spent, im
            kept.convert("RGB").save(os.path.join(folder, f"{name}-{size}.png"))
            cpu[f"{name}-{size}"] = best
    with open(os.path.join(folder, "cpu.json"), "w") as f:
        json.dump(cpu, f)


def svg_plot(rows, path):
    """Mean SSIMULACRA2 against median CPU ms per thumbnail, one mark per candidate and size."""
    width, height, pad = 640, 420, 60
    xs = [r["cpu"] for r in rows]
    ys = [r["mean"] for r in rows]
    x0, x1 = 0, max(xs) * 1.1
    y0, y1 = min(ys) - 2, max(ys) + 2

    def px(x):
        return pad + (x - x0) / (x1 - x0) * (width - 2 * pad)

    def py(y):
        return height - pad - (y - y0) / (y1 - y0) * (height - 2 * pad)

    colours = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    names = sorted({r["name"] for r in rows}, key=lambda n: [r["name"] for r in rows].index(n))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="black"/>',
           f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{height - pad}" stroke="black"/>',
           f'<text x="{width / 2}" y="{height - 20}" text-anchor="middle">CPU ms per thumbnail (median over the photos)</text>',
           f'<text x="18" y="{height / 2}" transform="rotate(-90 18 {height / 2})" text-anchor="middle">SSIMULACRA2, mean</text>']
    for k in range(6):
        x = x0 + (x1 - x0) * k / 5
        y = y0 + (y1 - y0) * k / 5
        out.append(f'<text x="{px(x):.0f}" y="{height - pad + 16}" text-anchor="middle">{x:.0f}</text>')
        out.append(f'<text x="{pad - 6}" y="{py(y) + 4:.0f}" text-anchor="end">{y:.0f}</text>')
    for r in rows:
        colour = colours[names.index(r["name"]) % len(colours)]
        shape = "circle" if r["size"] == min(x["size"] for x in rows) else "rect"
        if shape == "circle":
            out.append(f'<circle cx="{px(r["cpu"]):.1f}" cy="{py(r["mean"]):.1f}" r="5" fill="{colour}"/>')
        else:
            out.append(f'<rect x="{px(r["cpu"]) - 5:.1f}" y="{py(r["mean"]) - 5:.1f}" width="10" height="10" fill="{colour}"/>')
    for i, name in enumerate(names):
        out.append(f'<rect x="{width - pad - 190}" y="{pad + 16 * i - 9}" width="10" height="10" fill="{colours[i % len(colours)]}"/>')
        out.append(f'<text x="{width - pad - 175}" y="{pad + 16 * i}">{name}</text>')
    out.append(f'<text x="{width - pad - 190}" y="{pad + 16 * len(names) + 4}">circles: {min(r["size"] for r in rows)} px; squares: {max(r["size"] for r in rows)} px</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", nargs="+", required=True)
    parser.add_argument("--sizes", nargs="+", type=int, default=[256, 512])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", required=True)
    parser.add_argument("--candidate", action="append", default=[], help="NAME=DIR")
    args = parser.parse_args()

    candidates = [tuple(c.split("=", 1)) for c in args.candidate]
    pillow_dir = os.path.join(args.out, "pillow")
    pillow_thumbnails(args.photos, args.sizes, args.runs, pillow_dir)
    candidates.append(("Pillow thumbnail()", pillow_dir))

    scores = {name: {size: [] for size in args.sizes} for name, _ in candidates}
    cpu = {name: json.load(open(os.path.join(folder, "cpu.json"))) for name, folder in candidates}
    reference_dir = os.path.join(args.out, "reference")
    os.makedirs(reference_dir, exist_ok=True)
    for path in args.photos:
        name = os.path.basename(path)
        full = Image.open(path)
        full_linear = to_linear(np.asarray(full.convert("RGB")))
        for size in args.sizes:
            for candidate, folder in candidates:
                thumb_path = os.path.join(folder, f"{name}-{size}.png")
                thumb = Image.open(thumb_path).convert("RGB")
                ref_path = os.path.join(reference_dir, f"{name}-{thumb.size[0]}x{thumb.size[1]}.png")
                if not os.path.exists(ref_path):
                    reference(full_linear, thumb.size).save(ref_path)
                thumb.save(thumb_path)  # RGB, as the reference
                s2 = compute_ssimulacra2(ref_path, thumb_path)
                scores[candidate][size].append(
                    {"photo": name, "s2": s2, "ssim": ssim_luma(Image.open(ref_path), thumb),
                     "cpu": cpu[candidate][f"{name}-{size}"], "size": thumb.size})

    rows = []
    for size in args.sizes:
        print(f"\nFitted inside {size}x{size}, {len(args.photos)} photos:\n")
        print("| method | SSIMULACRA2 mean | min | SSIM mean | CPU ms per thumbnail (median / max) |")
        print("|---|---|---|---|---|")
        for candidate, _ in candidates:
            entries = scores[candidate][size]
            s2 = [e["s2"] for e in entries]
            ms = [e["cpu"] for e in entries]
            row = {"name": candidate, "size": size, "mean": statistics.mean(s2), "min": min(s2),
                   "ssim": statistics.mean(e["ssim"] for e in entries), "cpu": statistics.median(ms), "cpu_max": max(ms)}
            rows.append(row)
            print(f"| {candidate} | {row['mean']:.1f} | {row['min']:.1f} | {row['ssim']:.4f} | {row['cpu']:.1f} / {row['cpu_max']:.1f} |")
    with open(os.path.join(args.out, "scores.json"), "w") as f:
        json.dump({"rows": rows, "photos": scores}, f, indent=1, default=str)
    svg_plot(rows, os.path.join(args.out, "quality.svg"))
    print(f"\nwrote {os.path.join(args.out, 'quality.svg')}")


if __name__ == "__main__":
    sys.exit(main())
