#!/usr/bin/env python3
"""Plant a tiny ImageFolder tree (DIR/train/<class>/*.ppm, DIR/val/<class>/*.ppm) -- our own helper.

torchvision.datasets.ImageFolder accepts .ppm files and opens them with PIL, so plain binary
PPM images (written here without any imaging library) stand in for a real ImageNet folder.
Each class has its own colour and stripe direction; pixel noise comes from a fixed seed, so
every run writes the same bytes.

usage: python3 fake_image_folder.py DIR [--classes C] [--train N] [--val N] [--size S]
"""
import argparse
import os
import random


def image(rng, cls, size):
    base = ((cls * 97) % 256, (cls * 57 + 80) % 256, (cls * 31 + 160) % 256)
    out = bytearray()
    for y in range(size):
        for x in range(size):
            stripe = ((x if cls % 2 else y) // 4) % 2
            for c in range(3):
                v = base[c] // (2 if stripe else 1) + rng.randrange(32)
                out.append(min(v, 255))
    return b"P6\n%d %d\n255\n" % (size, size) + bytes(out)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("--classes", type=int, default=4)
    parser.add_argument("--train", type=int, default=16, help="images per class in train/")
    parser.add_argument("--val", type=int, default=2, help="images per class in val/")
    parser.add_argument("--size", type=int, default=32, help="side in pixels")
    args = parser.parse_args()
    rng = random.Random(99)
    for split, count in (("train", args.train), ("val", args.val)):
        for cls in range(args.classes):
            folder = os.path.join(args.root, split, "class%02d" % cls)
            os.makedirs(folder, exist_ok=True)
            for i in range(count):
                with open(os.path.join(folder, "img%04d.ppm" % i), "wb") as f:
                    f.write(image(rng, cls, args.size))
    print("ImageFolder: %d classes x (%d train, %d val) in %s" % (args.classes, args.train, args.val, args.root))


if __name__ == "__main__":
    main()
