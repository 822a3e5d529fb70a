#pragma once
// Escaping text for the markup formats the reports write: HTML (report.html, check.html) and XML
// (junit.xml). One function; the dialects differ only in the apostrophe's entity and in XML 1.0 having no
// place for control characters.
#include <string>

namespace autotune {

enum class Markup { html, xml };

/// &, <, >, " and ' as entities (' is &#39; in HTML, &apos; in XML); in XML, control characters other than
/// tab and newline are dropped (XML 1.0 cannot carry them).
std::string markup_escape(const std::string& text, Markup dialect);

inline std::string html_escape(const std::string& text) { return markup_escape(text, Markup::html); }
inline std::string xml_escape(const std::string& text) { return markup_escape(text, Markup::xml); }

}  // namespace autotune
