#pragma once
#include <string>
#include <vector>

namespace autotune {

/// Edit distance (insert, delete, substitute, swap two neighbours; each costs 1; case-insensitive).
int edit_distance(const std::string& a, const std::string& b);

/// The candidate closest to `word` when it is close enough to be a plausible typo (distance ≤ 1/3
/// of the longer word, at least 1, or `word` is a prefix of it), else "".
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — ready to append to an error message.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

/// "a, b, c" — for "allowed: ..." lists in error messages.
std::string join(const std::vector<std::string>& items, const std::string& sep = ", ");

}  // namespace autotune
