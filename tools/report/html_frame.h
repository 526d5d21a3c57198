// tools/report/html_frame.h — the frame that fsdpx's HTML pages share (`fsdpx report`, `fsdpx compare`): the
// doctype, the title, one inline style sheet (the base rules here plus the page's own) and the heading.
// Self-contained pages: no script, no external URL.
#pragma once

#include <string>

#include <fmt/format.h>

#include "tools/report/report_svg.h"

namespace fsdpx {

inline constexpr const char* kHtmlBaseStyle = R"(body{font-family:sans-serif;margin:24px;color:#222;max-width:1000px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px;border-bottom:1px solid #ddd}
figure{margin:12px 0}figcaption{font-size:12px;color:#555;margin-top:4px}
table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ddd;padding:3px 6px;text-align:right;white-space:nowrap}
)";

// Everything up to and including <h1>title</h1>; `extra_css` follows the base rules.
inline std::string html_page_open(const std::string& title, const std::string& extra_css) {
  return fmt::format("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n"
                     "<style>{}{}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
                     xml_escape(title), kHtmlBaseStyle, extra_css, xml_escape(title));
}

inline constexpr const char* kHtmlPageClose = "</body>\n</html>\n";

}  // namespace fsdpx
