#include "data/jpeg.h"

#include <turbojpeg.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <memory>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

// jpeglib.h needs FILE and size_t declared first.
#include <jerror.h>
#include <jpeglib.h>

namespace autotune::data {

std::string to_string(BadReason r) {
  switch (r) {
    case BadReason::empty:
      return "empty";
    case BadReason::not_jpeg:
      return "not_jpeg";
    case BadReason::truncated:
      return "truncated";
    case BadReason::corrupt:
      return "corrupt";
    case BadReason::unreadable:
      return "unreadable";
  }
  return "corrupt";
}

namespace {

/// Classifies bytes that cannot be a complete JPEG before any decoder sees them.
void check_container(const std::uint8_t* d, std::size_t n) {
  if (n == 0) throw DecodeError(BadReason::empty, "empty file");
  if (n >= 8 && std::memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) throw DecodeError(BadReason::not_jpeg, "a PNG file, not a JPEG");
  if (n >= 6 && (std::memcmp(d, "GIF87a", 6) == 0 || std::memcmp(d, "GIF89a", 6) == 0))
    throw DecodeError(BadReason::not_jpeg, "a GIF file, not a JPEG");
  if (n < 4 || d[0] != 0xFF || d[1] != 0xD8 || d[2] != 0xFF) throw DecodeError(BadReason::not_jpeg, "not a JPEG (no SOI marker)");
  // A complete JPEG ends with EOI (FF D9), possibly followed by a little padding. A file cut short has
  // none near its end; checking here makes every decode mode skip it alike (a region decode would
  // otherwise never reach the missing part).
  const std::size_t tail = std::min<std::size_t>(n, 4096);
  bool eoi = false;
  for (std::size_t i = n - tail; i + 1 < n && !eoi; ++i) eoi = d[i] == 0xFF && d[i + 1] == 0xD9;
  if (!eoi) throw DecodeError(BadReason::truncated, "truncated JPEG (no EOI marker at the end)");
}

struct ErrorMgr {
  jpeg_error_mgr pub;
  std::jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool premature_eof;
};

void on_error(j_common_ptr cinfo) {
  auto* err = reinterpret_cast<ErrorMgr*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, err->message);
  std::longjmp(err->jump, 1);
}

void on_message(j_common_ptr cinfo, int level) {
  auto* err = reinterpret_cast<ErrorMgr*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) err->premature_eof = true;  // data ran out: padded with gray
}

void cmyk_to_rgb(const std::uint8_t* in, std::uint8_t* out, int pixels, bool inverted) {
  // Adobe writes CMYK inverted (255 = no ink); others write it straight.
  for (int i = 0; i < pixels; ++i, in += 4, out += 3) {
    int c = in[0], m = in[1], y = in[2], k = in[3];
    if (!inverted) c = 255 - c, m = 255 - m, y = 255 - y, k = 255 - k;
    out[0] = static_cast<std::uint8_t>((c * k + 127) / 255);
    out[1] = static_cast<std::uint8_t>((m * k + 127) / 255);
    out[2] = static_cast<std::uint8_t>((y * k + 127) / 255);
  }
}

/// Region decode with the libjpeg API into `out` (its pixel buffer is reused: grown, never shrunk or
/// zero-filled again). Rows are decoded straight into it. All non-trivial objects live outside the
/// setjmp scope.
void libjpeg_region(const std::uint8_t* data, std::size_t size, const Rect& window, int denom, bool whole, RegionImage& out) {
  std::vector<std::uint8_t> cmyk_row;
  std::vector<JSAMPROW> rows;
  jpeg_decompress_struct cinfo;
  ErrorMgr err;
  std::memset(&err, 0, sizeof err);
  cinfo.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    throw DecodeError(BadReason::corrupt, std::string("corrupt JPEG: ") + err.message);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, data, static_cast<unsigned long>(size));
  jpeg_read_header(&cinfo, TRUE);
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;  // grayscale → RGB is done by libjpeg-turbo
  cinfo.scale_num = 1;
  cinfo.scale_denom = static_cast<unsigned>(denom);
  cinfo.dct_method = JDCT_ISLOW;
  jpeg_start_decompress(&cinfo);
  const int ow = static_cast<int>(cinfo.output_width), oh = static_cast<int>(cinfo.output_height);
  const double sx = static_cast<double>(ow) / cinfo.image_width, sy = static_cast<double>(oh) / cinfo.image_height;
  // The window in scaled pixels, widened to whole pixels and clamped to the image.
  int x0 = 0, y0 = 0, x1 = ow, y1 = oh;
  if (!whole) {
    x0 = std::clamp(static_cast<int>(std::floor(window.x * sx)) - 1, 0, ow - 1);
    y0 = std::clamp(static_cast<int>(std::floor(window.y * sy)) - 1, 0, oh - 1);
    x1 = std::clamp(static_cast<int>(std::ceil((window.x + window.w) * sx)) + 1, x0 + 1, ow);
    y1 = std::clamp(static_cast<int>(std::ceil((window.y + window.h) * sy)) + 1, y0 + 1, oh);
  }
  JDIMENSION xoff = static_cast<JDIMENSION>(x0), cw = static_cast<JDIMENSION>(x1 - x0);
  if (!whole && (x0 > 0 || x1 < ow)) jpeg_crop_scanline(&cinfo, &xoff, &cw);  // widens to iMCU columns
  out.image.width = static_cast<int>(cw);
  out.image.height = y1 - y0;
  const std::size_t stride = static_cast<std::size_t>(out.image.width) * 3;
  if (out.image.rgb.size() < stride * out.image.height) out.image.rgb.resize(stride * out.image.height);
  rows.resize(static_cast<size_t>(out.image.height));
  if (cmyk) {
    cmyk_row.resize(static_cast<size_t>(cw) * 4);
    std::fill(rows.begin(), rows.end(), cmyk_row.data());
  } else {
    for (int r = 0; r < out.image.height; ++r) rows[static_cast<size_t>(r)] = out.image.rgb.data() + stride * r;
  }
  if (y0 > 0) jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(y0));
  for (int r = 0; r < out.image.height;) {
    // RGB rows go straight into the image, as many per call as libjpeg has ready; CMYK one at a time
    // through a row buffer and converted.
    const int want = cmyk ? 1 : out.image.height - r;
    const int got = static_cast<int>(jpeg_read_scanlines(&cinfo, rows.data() + r, static_cast<JDIMENSION>(want)));
    if (got <= 0) {  // cannot happen with a memory source (no suspension); never leave rows unwritten
      jpeg_destroy_decompress(&cinfo);
      throw DecodeError(BadReason::corrupt, "corrupt JPEG: the decoder stopped returning rows");
    }
    if (cmyk) cmyk_to_rgb(cmyk_row.data(), out.image.rgb.data() + stride * r, out.image.width, cinfo.saw_Adobe_marker);
    r += got;
  }
  if (static_cast<int>(cinfo.output_scanline) < oh)
    jpeg_skip_scanlines(&cinfo, static_cast<JDIMENSION>(oh) - cinfo.output_scanline);
  jpeg_finish_decompress(&cinfo);
  const bool eof = err.premature_eof;
  jpeg_destroy_decompress(&cinfo);
  if (eof) throw DecodeError(BadReason::truncated, "truncated JPEG (premature end of data)");
  out.scale_denom = denom;
  out.window_in_image = {window.x * sx - static_cast<double>(xoff), window.y * sy - y0, window.w * sx, window.h * sy};
}

struct TjDeleter {
  void operator()(void* h) const {
    if (h) tjDestroy(h);
  }
};
using TjHandle = std::unique_ptr<void, TjDeleter>;

/// One TurboJPEG handle per thread: creating one costs more than decoding a small image.
void* tj_decompressor() {
  thread_local TjHandle h(tjInitDecompress());
  if (!h) throw DecodeError(BadReason::corrupt, std::string("tjInitDecompress failed: ") + tjGetErrorStr2(nullptr));
  return h.get();
}

}  // namespace

JpegHeader read_header(const std::uint8_t* data, std::size_t size) {
  check_container(data, size);
  int w = 0, h = 0, sub = 0, cs = 0;
  if (tjDecompressHeader3(tj_decompressor(), data, static_cast<unsigned long>(size), &w, &h, &sub, &cs) != 0)
    throw DecodeError(BadReason::corrupt, std::string("corrupt JPEG header: ") + tjGetErrorStr2(tj_decompressor()));
  JpegHeader hd;
  hd.width = w;
  hd.height = h;
  hd.cmyk = cs == TJCS_CMYK || cs == TJCS_YCCK;
  hd.grayscale = cs == TJCS_GRAY;
  return hd;
}

Image decode_full(const std::uint8_t* data, std::size_t size) {
  const JpegHeader hd = read_header(data, size);
  if (hd.cmyk) {  // TurboJPEG 2.1 cannot convert CMYK to RGB
    RegionImage r;
    libjpeg_region(data, size, {}, 1, true, r);
    r.image.rgb.resize(static_cast<size_t>(r.image.width) * r.image.height * 3);
    return std::move(r.image);
  }
  Image img;
  img.width = hd.width;
  img.height = hd.height;
  img.rgb.resize(static_cast<size_t>(hd.width) * hd.height * 3);
  void* tj = tj_decompressor();
  if (tjDecompress2(tj, data, static_cast<unsigned long>(size), img.rgb.data(), hd.width, 0, hd.height, TJPF_RGB, 0) != 0) {
    const std::string msg = tjGetErrorStr2(tj);
    if (msg.find("Premature end") != std::string::npos) throw DecodeError(BadReason::truncated, "truncated JPEG: " + msg);
    // Other warnings (e.g. extraneous bytes before a marker) leave a complete image: keep it.
    if (tjGetErrorCode(tj) != TJERR_WARNING) throw DecodeError(BadReason::corrupt, "corrupt JPEG: " + msg);
  }
  return img;
}

void decode_region(const std::uint8_t* data, std::size_t size, const Rect& window, int scale_denom, RegionImage& out) {
  if (scale_denom != 1 && scale_denom != 2 && scale_denom != 4 && scale_denom != 8)
    throw std::invalid_argument("scale_denom must be 1, 2, 4 or 8");
  check_container(data, size);
  libjpeg_region(data, size, window, scale_denom, false, out);
}

RegionImage decode_region(const std::uint8_t* data, std::size_t size, const Rect& window, int scale_denom) {
  RegionImage r;
  decode_region(data, size, window, scale_denom, r);
  return r;
}

int choose_scale_denom(double w, double h, int target_w, int target_h) {
  for (int d : {8, 4, 2})
    if (w / d >= target_w && h / d >= target_h) return d;
  return 1;
}

namespace {

std::vector<std::uint8_t> compress(const std::uint8_t* pixels, int w, int h, int pf, int subsamp, int quality) {
  TjHandle tj(tjInitCompress());
  unsigned char* buf = nullptr;
  unsigned long len = 0;
  if (tjCompress2(tj.get(), pixels, w, 0, h, pf, &buf, &len, subsamp, quality, 0) != 0)
    throw std::runtime_error(std::string("tjCompress2: ") + tjGetErrorStr2(tj.get()));
  std::vector<std::uint8_t> out(buf, buf + len);
  tjFree(buf);
  return out;
}

}  // namespace

std::vector<std::uint8_t> encode_jpeg(const Image& img, int quality, bool subsamp444) {
  return compress(img.rgb.data(), img.width, img.height, TJPF_RGB, subsamp444 ? TJSAMP_444 : TJSAMP_420, quality);
}

std::vector<std::uint8_t> encode_jpeg_gray(const Image& img, int quality) {
  return compress(img.rgb.data(), img.width, img.height, TJPF_RGB, TJSAMP_GRAY, quality);
}

std::vector<std::uint8_t> encode_jpeg_cmyk(const Image& img, int quality) {
  // RGB → CMYK (K = 1 − max), written as TurboJPEG writes CMYK: Adobe marker, inverted values.
  std::vector<std::uint8_t> cmyk(static_cast<size_t>(img.width) * img.height * 4);
  for (size_t i = 0, n = static_cast<size_t>(img.width) * img.height; i < n; ++i) {
    const int r = img.rgb[3 * i], g = img.rgb[3 * i + 1], b = img.rgb[3 * i + 2];
    const int mx = std::max({r, g, b});
    // Inverted CMYK: stored C' = 255 − C etc.; with K' = max, C' = r·255/max.
    cmyk[4 * i + 0] = static_cast<std::uint8_t>(mx ? (r * 255 + mx / 2) / mx : 255);
    cmyk[4 * i + 1] = static_cast<std::uint8_t>(mx ? (g * 255 + mx / 2) / mx : 255);
    cmyk[4 * i + 2] = static_cast<std::uint8_t>(mx ? (b * 255 + mx / 2) / mx : 255);
    cmyk[4 * i + 3] = static_cast<std::uint8_t>(mx);
  }
  return compress(cmyk.data(), img.width, img.height, TJPF_CMYK, TJSAMP_444, quality);
}

std::size_t read_bytes(const std::string& path, std::vector<std::uint8_t>& buf) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw DecodeError(BadReason::unreadable, "cannot open: " + std::string(std::strerror(errno)));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_size < 0) throw DecodeError(BadReason::unreadable, "cannot read its size");
  const auto n = static_cast<std::size_t>(st.st_size);
  if (n == 0) throw DecodeError(BadReason::empty, "empty file");
  if (buf.size() < n) buf.resize(n);
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = ::read(fd, buf.data() + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) throw DecodeError(BadReason::unreadable, "read failed: " + std::string(std::strerror(errno)));
    if (r == 0) break;  // shrank while we read: what is there is the file
    got += static_cast<std::size_t>(r);
  }
  if (got == 0) throw DecodeError(BadReason::empty, "empty file");
  return got;
}

std::vector<std::uint8_t> read_bytes(const std::string& path) {
  std::vector<std::uint8_t> bytes;
  bytes.resize(read_bytes(path, bytes));
  return bytes;
}

}  // namespace autotune::data
