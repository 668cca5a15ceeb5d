#!/usr/bin/env python3
"""Makes the colour-management test files and their references.

    make-colour-fixtures.py OUT GHOSTSCRIPT_ICC_DIR EXTRA_ICC_DIR

A 24-patch chart (the ColorChecker's sRGB numbers, used as numbers in each
source space, 32x32 pixels a patch) is written tagged with each profile in
the formats that carry one: JPEG (quality 98, no chroma subsampling), PNG
(iCCP), lossless WebP (ICCP), GIF (an ICCRGBG1012 extension written here),
plus CMYK and grey JPEGs and PNG sRGB/gAMA/cHRM chunks. Each tagged file's
reference is Little CMS's own conversion of the same file's pixels (as
Pillow decodes them) to sRGB: ImageCms.profileToProfile, intent 1
(relative colorimetric), flags 0 (no black-point compensation), written
as raw RGB. Also malformed and mismatched profiles, and their untagged
twins. manifest.json lists everything.

EXTRA_ICC_DIR holds profiles the Swift test built with Little CMS (Display
P3, a gamma-1.8 grey, the profiles PNG chunks stand for), which Pillow's
ImageCms cannot build from primaries.
"""
import io
import json
import os
import struct
import sys
import zlib

from PIL import Image, ImageCms, PngImagePlugin

out, gs, extra = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)
manifest = []

PATCHES = [
    (115, 82, 68), (194, 150, 130), (98, 122, 157), (87, 108, 67), (133, 128, 177), (103, 189, 170),
    (214, 126, 44), (80, 91, 166), (193, 90, 99), (94, 60, 108), (157, 188, 64), (224, 163, 46),
    (56, 61, 150), (70, 148, 73), (175, 54, 60), (231, 199, 31), (187, 86, 149), (8, 133, 161),
    (243, 243, 242), (200, 200, 200), (160, 160, 160), (122, 122, 121), (85, 85, 85), (52, 52, 52),
]


def chart(mode="RGB"):
    im = Image.new("RGB", (6 * 32, 4 * 32))
    for i, colour in enumerate(PATCHES):
        x, y = (i % 6) * 32, (i // 6) * 32
        im.paste(colour, (x, y, x + 32, y + 32))
    if mode == "L":
        return im.convert("L")
    return im


def read(path):
    with open(path, "rb") as f:
        return f.read()


def srgb():
    return ImageCms.createProfile("sRGB")


def reference(path, profile_bytes, name):
    """Little CMS's conversion of the file's decoded pixels to sRGB."""
    im = Image.open(path)
    im.load()
    if im.mode == "P":
        im = im.convert("RGB")
    source = ImageCms.ImageCmsProfile(io.BytesIO(profile_bytes))
    converted = ImageCms.profileToProfile(im, source, srgb(), renderingIntent=1, outputMode="RGB", flags=0)
    ref = os.path.join(out, name + ".ref.rgb")
    with open(ref, "wb") as f:
        f.write(converted.tobytes())
    return os.path.basename(ref)


def add(name, path, kind, profile=None, description=None, twin=None, note=""):
    entry = {"name": name, "file": os.path.basename(path), "kind": kind, "note": note}
    if profile is not None and kind == "tagged":
        entry["reference"] = reference(path, profile, os.path.basename(path))
    if twin:
        entry["twin"] = os.path.basename(twin)
    if description:
        entry["description"] = description
    manifest.append(entry)


def jpeg(im, name, icc=None):
    path = os.path.join(out, name + ".jpg")
    options = {"quality": 98, "subsampling": 0}
    if icc is not None:
        options["icc_profile"] = icc
    im.save(path, "JPEG", **options)
    return path


def png(im, name, icc=None, chunks=()):
    path = os.path.join(out, name + ".png")
    info = PngImagePlugin.PngInfo()
    for cid, data in chunks:
        info.add(cid, data)
    options = {"pnginfo": info}
    if icc is not None:
        options["icc_profile"] = icc
    im.save(path, "PNG", **options)
    return path


def webp(im, name, icc=None):
    path = os.path.join(out, name + ".webp")
    options = {"lossless": True, "exact": True}
    if icc is not None:
        options["icc_profile"] = icc
    im.save(path, "WEBP", **options)
    return path


def gif(im, name, icc=None):
    """Pillow writes no ICC extension: it is put after the logical screen and
    its global colour table, 255-byte sub-blocks, as the ICC's GIF note has it."""
    path = os.path.join(out, name + ".gif")
    buffer = io.BytesIO()
    im.convert("P", palette=Image.ADAPTIVE, colors=256).save(buffer, "GIF")
    data = buffer.getvalue()
    if icc is not None:
        packed = data[10]
        table = 3 << ((packed & 7) + 1) if packed & 0x80 else 0
        at = 13 + table
        blocks = b"".join(bytes([len(icc[i:i + 255])]) + icc[i:i + 255] for i in range(0, len(icc), 255))
        data = data[:at] + b"\x21\xff\x0bICCRGBG1012" + blocks + b"\x00" + data[at:]
    with open(path, "wb") as f:
        f.write(data)
    return path


def app2_segments(icc, count=None, sequences=None, chunk=65519):
    parts = [icc[i:i + chunk] for i in range(0, len(icc), chunk)] or [b""]
    count = len(parts) if count is None else count
    sequences = list(range(1, len(parts) + 1)) if sequences is None else sequences
    out_bytes = b""
    for seq, part in zip(sequences, parts):
        payload = b"ICC_PROFILE\x00" + bytes([seq, count]) + part
        out_bytes += b"\xff\xe2" + struct.pack(">H", len(payload) + 2) + payload
    return out_bytes


def jpeg_with_segments(untagged_path, name, segments):
    data = read(untagged_path)
    path = os.path.join(out, name + ".jpg")
    with open(path, "wb") as f:
        f.write(data[:2] + segments + data[2:])
    return path


def png_chunk(cid, payload):
    return struct.pack(">I", len(payload)) + cid + payload + struct.pack(">I", zlib.crc32(cid + payload) & 0xFFFFFFFF)


def png_with_chunk(untagged_path, name, chunk):
    data = read(untagged_path)
    at = 8 + 25  # after the signature and IHDR
    path = os.path.join(out, name + ".png")
    with open(path, "wb") as f:
        f.write(data[:at] + chunk + data[at:])
    return path


profiles = {
    "adobe-rgb": read(os.path.join(gs, "a98.icc")),
    "prophoto": read(os.path.join(gs, "rommrgb.icc")),
    "display-p3": read(os.path.join(extra, "display-p3.icc")),
}
srgb_gs = read(os.path.join(gs, "srgb.icc"))
cmyk = read(os.path.join(gs, "default_cmyk.icc"))
gray18 = read(os.path.join(extra, "gray-gamma-1.8.icc"))

rgb = chart()
grey = chart("L")

# Untagged twins (the pixels an untagged file gives).
plain = {
    "jpg": jpeg(rgb, "untagged-rgb"), "png": png(rgb, "untagged-rgb"), "webp": webp(rgb, "untagged-rgb"),
    "gif": gif(rgb, "untagged-rgb"),
}
add("untagged JPEG", plain["jpg"], "untagged")
add("untagged PNG", plain["png"], "untagged")
add("untagged WebP", plain["webp"], "untagged")
add("untagged GIF", plain["gif"], "untagged")

for name, icc in profiles.items():
    add(f"{name} JPEG", jpeg(rgb, name, icc), "tagged", icc)
    add(f"{name} PNG", png(rgb, name, icc), "tagged", icc)
    add(f"{name} WebP", webp(rgb, name, icc), "tagged", icc)
    add(f"{name} GIF", gif(rgb, name, icc), "tagged", icc)

# CMYK: Pillow writes an Adobe APP14 marker and inverted inks; the press
# profile (187 KB) takes three APP2 segments.
cmyk_chart = ImageCms.profileToProfile(rgb, srgb(), ImageCms.ImageCmsProfile(io.BytesIO(cmyk)), renderingIntent=1, outputMode="CMYK")
add("CMYK JPEG (press profile)", jpeg(cmyk_chart, "cmyk-tagged", cmyk), "tagged", cmyk)
add("CMYK JPEG untagged", jpeg(cmyk_chart, "cmyk-untagged"), "untagged-cmyk", note="reference for the table only: Little CMS with the same press profile")
manifest[-1]["pressReference"] = reference(os.path.join(out, "cmyk-untagged.jpg"), cmyk, "cmyk-untagged-press")

# Grey.
plain["grey"] = jpeg(grey, "untagged-grey")
add("untagged grey JPEG", plain["grey"], "untagged")
add("grey gamma 1.8 JPEG", jpeg(grey, "grey-18", gray18), "tagged", gray18)
add("grey gamma 1.8 PNG", png(grey, "grey-18", gray18), "tagged", gray18)
plain["grey-png"] = png(grey, "untagged-grey")

# sRGB: tagged or not, the same pixels.
add("sRGB (Ghostscript) JPEG", jpeg(rgb, "srgb-gs", srgb_gs), "srgb", twin=plain["jpg"])
add("sRGB (Little CMS) JPEG", jpeg(rgb, "srgb-lcms", ImageCms.ImageCmsProfile(srgb()).tobytes()), "srgb", twin=plain["jpg"])
add("sRGB (Ghostscript) PNG", png(rgb, "srgb-gs", srgb_gs), "srgb", twin=plain["png"])
add("sRGB (Ghostscript) WebP", webp(rgb, "srgb-gs", srgb_gs), "srgb", twin=plain["webp"])
add("sRGB (Ghostscript) GIF", gif(rgb, "srgb-gs", srgb_gs), "srgb", twin=plain["gif"])
add("PNG sRGB chunk", png(rgb, "srgb-chunk", chunks=[(b"sRGB", b"\x00")]), "srgb", twin=plain["png"])
add("PNG gAMA 1/2.2 alone", png(rgb, "gama-45455", chunks=[(b"gAMA", struct.pack(">I", 45455))]), "srgb", twin=plain["png"])

# PNG gAMA and cHRM without a profile: the reference is the profile they
# stand for (built by the Swift test with Little CMS).
add("PNG gAMA 1/1.8", png(rgb, "gama-55556", chunks=[(b"gAMA", struct.pack(">I", 55556))]), "tagged",
    read(os.path.join(extra, "chunks-gamma-1.8.icc")))
p3_chrm = struct.pack(">8I", 31270, 32900, 68000, 32000, 26500, 69000, 15000, 6000)
add("PNG gAMA 1/2.2 + cHRM P3", png(rgb, "gama-chrm-p3", chunks=[(b"gAMA", struct.pack(">I", 45455)), (b"cHRM", p3_chrm)]),
    "tagged", read(os.path.join(extra, "chunks-p3-gamma-2.2.icc")))

# Malformed: each decodes as its untagged twin, with a warning.
a98 = profiles["adobe-rgb"]
add("JPEG truncated profile", jpeg(rgb, "bad-truncated", a98[:300]), "malformed", twin=plain["jpg"])
add("JPEG garbage profile", jpeg(rgb, "bad-garbage", bytes((i * 37 + 11) % 256 for i in range(600))), "malformed", twin=plain["jpg"])
add("JPEG segment 2 of 2 missing", jpeg_with_segments(plain["jpg"], "bad-missing-segment", app2_segments(a98, count=2)), "malformed", twin=plain["jpg"])
add("JPEG segment numbers repeated", jpeg_with_segments(plain["jpg"], "bad-repeated-segment",
    app2_segments(a98, count=2, sequences=[1, 1], chunk=300)), "malformed", twin=plain["jpg"])
add("JPEG segment 0 of 0", jpeg_with_segments(plain["jpg"], "bad-zero-segment", app2_segments(a98, count=0, sequences=[0])), "malformed", twin=plain["jpg"])
add("JPEG CMYK profile on RGB", jpeg(rgb, "bad-cmyk-on-rgb", cmyk), "malformed", twin=plain["jpg"])
add("JPEG grey profile on RGB", jpeg(rgb, "bad-grey-on-rgb", gray18), "malformed", twin=plain["jpg"])
add("JPEG RGB profile on grey", jpeg(grey, "bad-rgb-on-grey", a98), "malformed", twin=plain["grey"])
bad_zlib = b"ICC\x00\x00" + zlib.compress(a98)[:-40] + b"\x00" * 7
add("PNG iCCP cut zlib stream", png_with_chunk(plain["png"], "bad-iccp-zlib", png_chunk(b"iCCP", bad_zlib)), "malformed", twin=plain["png"])
add("PNG iCCP truncated profile", png_with_chunk(plain["png"], "bad-iccp-truncated",
    png_chunk(b"iCCP", b"ICC\x00\x00" + zlib.compress(a98[:200]))), "malformed", twin=plain["png"])
add("PNG iCCP no name", png_with_chunk(plain["png"], "bad-iccp-noname", png_chunk(b"iCCP", b"\x00\x00" + zlib.compress(a98))), "malformed", twin=plain["png"])
add("WebP garbage profile", webp(rgb, "bad-garbage", bytes(range(256)) * 2), "malformed", twin=plain["webp"])
add("GIF truncated profile", gif(rgb, "bad-truncated", a98[:300]), "malformed", twin=plain["gif"])

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
print(f"{len(manifest)} files")
