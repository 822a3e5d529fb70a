#include "reports/markup.h"

namespace autotune {

std::string markup_escape(const std::string& text, Markup dialect) {
  std::string o;
  o.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        o += "&amp;";
        break;
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '"':
        o += "&quot;";
        break;
      case '\'':
        o += dialect == Markup::html ? "&#39;" : "&apos;";
        break;
      default:
        if (dialect == Markup::html || static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n') o += c;
    }
  }
  return o;
}

}  // namespace autotune
