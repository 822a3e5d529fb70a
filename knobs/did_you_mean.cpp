#include "knobs/did_you_mean.h"

#include <algorithm>
#include <cctype>

namespace autotune {

int edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: a full (n+1)×(m+1) table, so swapping two neighbours ("mpl" → "mlp")
  // can count as one edit, as typos usually are.
  const size_t n = a.size(), m = b.size();
  std::vector<std::vector<int>> d(n + 1, std::vector<int>(m + 1));
  for (size_t i = 0; i <= n; ++i) d[i][0] = static_cast<int>(i);
  for (size_t j = 0; j <= m; ++j) d[0][j] = static_cast<int>(j);
  auto eq = [](char x, char y) { return std::tolower(x) == std::tolower(y); };
  for (size_t i = 1; i <= n; ++i) {
    for (size_t j = 1; j <= m; ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (eq(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && eq(a[i - 1], b[j - 2]) && eq(a[i - 2], b[j - 1])) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  int best_d = 1 << 30;
  for (const auto& c : candidates) {
    int d = edit_distance(word, c);
    if (!word.empty() && c.rfind(word, 0) == 0) d = std::min(d, 1);  // prefix: "batch" → batch_size
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  if (best.empty()) return "";
  const int limit = std::max<int>(1, static_cast<int>(std::max(word.size(), best.size())) / 3);
  return best_d <= limit ? best : "";
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  const std::string m = closest_match(word, candidates);
  return m.empty() ? "" : " (did you mean '" + m + "'?)";
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += sep;
    out += items[i];
  }
  return out;
}

}  // namespace autotune
