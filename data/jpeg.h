#pragma once
// JPEG decoding with libjpeg-turbo, LibTorch-free (the tuner links it for `prepare-data`).
//   jpeg_full:       TurboJPEG tjDecompress2 of the whole image, then crop + resample.
//   jpeg_crop_scale: libjpeg API: DCT-domain scaling by the largest of 1/2, 1/4, 1/8 that keeps the
//                    crop window at least the target size, jpeg_crop_scanline to the window's columns,
//                    jpeg_skip_scanlines over the rows above it, and only the window's rows decoded.
// Grayscale and CMYK/YCCK (Adobe, inverted or not) come out as RGB. Anything that is not a complete
// JPEG throws DecodeError with a reason a loader counts: empty, not_jpeg (e.g. a PNG named .jpg),
// truncated, corrupt, unreadable.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace autotune::data {

/// 8-bit RGB, rows top to bottom, HWC.
struct Image {
  int width = 0, height = 0;
  std::vector<std::uint8_t> rgb;
};

enum class BadReason { empty, not_jpeg, truncated, corrupt, unreadable };
std::string to_string(BadReason r);

class DecodeError : public std::runtime_error {
 public:
  DecodeError(BadReason r, const std::string& what) : std::runtime_error(what), reason(r) {}
  BadReason reason;
};

/// A source rectangle in pixels of the full-size image (x, y: top-left; may be fractional after scaling).
struct Rect {
  double x = 0, y = 0, w = 0, h = 0;
};

struct JpegHeader {
  int width = 0, height = 0;
  bool cmyk = false;  ///< CMYK or YCCK: converted to RGB on decode
  bool grayscale = false;
};

/// Reads the header only. Throws DecodeError.
JpegHeader read_header(const std::uint8_t* data, std::size_t size);

/// The whole image at full size (TurboJPEG; CMYK through the libjpeg API). Throws DecodeError.
Image decode_full(const std::uint8_t* data, std::size_t size);

/// Decoded pixels covering `window` (full-size coordinates) at 1/`scale_denom` size (1, 2, 4, 8),
/// plus where the window lies in them (`window_in_image`, in the returned image's pixels).
struct RegionImage {
  Image image;
  Rect window_in_image;
  int scale_denom = 1;
};
RegionImage decode_region(const std::uint8_t* data, std::size_t size, const Rect& window, int scale_denom);
/// The same into `out`, reusing its pixel buffer (a loader thread keeps one): `out.image.rgb` may then
/// be longer than width × height × 3 — the pixels are its first width × height × 3 bytes. A kept buffer
/// holds on to the largest window it has decoded (up to ~15 MB for a 5 MP photo at full scale).
void decode_region(const std::uint8_t* data, std::size_t size, const Rect& window, int scale_denom, RegionImage& out);

/// The largest DCT scale denominator in {1, 2, 4, 8} that keeps a `w`×`h` window at least
/// `target_w`×`target_h` after scaling.
int choose_scale_denom(double w, double h, int target_w, int target_h);

/// Encodes RGB as a baseline JPEG (TurboJPEG tjCompress2, 4:2:0 unless `subsamp444`): for fixtures,
/// benchmark folders and tests.
std::vector<std::uint8_t> encode_jpeg(const Image& img, int quality, bool subsamp444 = false);
/// A grayscale JPEG of the image's luma, and a CMYK JPEG (Adobe-style inverted) of it: bad-data fixtures.
std::vector<std::uint8_t> encode_jpeg_gray(const Image& img, int quality);
std::vector<std::uint8_t> encode_jpeg_cmyk(const Image& img, int quality);

/// Reads a file's bytes; throws DecodeError(unreadable / empty) naming the file.
std::vector<std::uint8_t> read_bytes(const std::string& path);
/// The same into `buf` (grown when the file is larger, never shrunk: a loader thread reuses one);
/// returns the file's size — the bytes are buf's first that many.
std::size_t read_bytes(const std::string& path, std::vector<std::uint8_t>& buf);

}  // namespace autotune::data
