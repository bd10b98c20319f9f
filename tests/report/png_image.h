#pragma once

// Just enough PNG decoding for the browser test to look at a screenshot: 8-bit RGB/RGBA,
// non-interlaced (what Chromium writes), all five row filters.

#include <zlib.h>

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace bigmac::report::testing {

struct PngImage {
  std::uint32_t width = 0, height = 0;
  std::vector<std::uint8_t> rgb;  ///< width * height * 3
};

inline std::uint32_t be32(const std::string& s, std::size_t at) {
  return (std::uint32_t{static_cast<std::uint8_t>(s[at])} << 24) |
         (std::uint32_t{static_cast<std::uint8_t>(s[at + 1])} << 16) |
         (std::uint32_t{static_cast<std::uint8_t>(s[at + 2])} << 8) |
         std::uint32_t{static_cast<std::uint8_t>(s[at + 3])};
}

inline std::optional<PngImage> decode_png(const std::string& file) {
  if (file.size() < 8 || file.compare(0, 8, "\x89PNG\r\n\x1a\n") != 0) return std::nullopt;
  PngImage image;
  int channels = 0;
  std::string idat;
  for (std::size_t at = 8; at + 8 <= file.size();) {
    const std::uint32_t length = be32(file, at);
    const std::string type = file.substr(at + 4, 4);
    if (at + 12 + length > file.size()) return std::nullopt;
    if (type == "IHDR") {
      image.width = be32(file, at + 8);
      image.height = be32(file, at + 12);
      const int depth = static_cast<std::uint8_t>(file[at + 16]);
      const int colour = static_cast<std::uint8_t>(file[at + 17]);
      const int interlace = static_cast<std::uint8_t>(file[at + 20]);
      if (depth != 8 || interlace != 0 || (colour != 2 && colour != 6)) return std::nullopt;
      channels = colour == 2 ? 3 : 4;
    } else if (type == "IDAT") {
      idat += file.substr(at + 8, length);
    }
    at += 12 + length;
  }
  if (!channels || !image.width || !image.height) return std::nullopt;
  const std::size_t stride = image.width * static_cast<std::size_t>(channels);
  std::vector<std::uint8_t> raw((stride + 1) * image.height);
  uLongf raw_size = raw.size();
  if (uncompress(raw.data(), &raw_size, reinterpret_cast<const Bytef*>(idat.data()), idat.size()) !=
          Z_OK ||
      raw_size != raw.size()) {
    return std::nullopt;
  }
  std::vector<std::uint8_t> pixels(stride * image.height);
  const auto ch = static_cast<std::size_t>(channels);
  for (std::size_t y = 0; y < image.height; ++y) {
    const std::uint8_t filter = raw[y * (stride + 1)];
    const std::uint8_t* in = &raw[y * (stride + 1) + 1];
    std::uint8_t* row = &pixels[y * stride];
    const std::uint8_t* up = y ? &pixels[(y - 1) * stride] : nullptr;
    for (std::size_t x = 0; x < stride; ++x) {
      const int a = x >= ch ? row[x - ch] : 0;
      const int b = up ? up[x] : 0;
      const int c = (up && x >= ch) ? up[x - ch] : 0;
      int predicted = 0;
      switch (filter) {
        case 0:
          predicted = 0;
          break;
        case 1:
          predicted = a;
          break;
        case 2:
          predicted = b;
          break;
        case 3:
          predicted = (a + b) / 2;
          break;
        case 4: {
          const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
          predicted = (pa <= pb && pa <= pc) ? a : (pb <= pc ? b : c);
          break;
        }
        default:
          return std::nullopt;
      }
      row[x] = static_cast<std::uint8_t>(in[x] + predicted);
    }
  }
  image.rgb.reserve(std::size_t{image.width} * image.height * 3);
  for (std::size_t i = 0; i < pixels.size(); i += ch) {
    image.rgb.insert(image.rgb.end(), &pixels[i], &pixels[i] + 3);
  }
  return image;
}

}  // namespace bigmac::report::testing
