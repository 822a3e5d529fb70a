#pragma once
// Unions of time intervals — what the profile's communication figures (profiler/analysis.cpp, in ns) and
// a data-parallel step's (workloads/engine/dist/ddp.cpp, summarize_comm, in seconds) both measure.
#include <algorithm>
#include <utility>
#include <vector>

namespace autotune::prof {

template <class T>
using Spans = std::vector<std::pair<T, T>>;

/// The union of `v`'s intervals, sorted and disjoint (empty ones dropped; touching ones joined).
template <class T>
Spans<T> merged(Spans<T> v) {
  std::sort(v.begin(), v.end());
  Spans<T> out;
  for (const auto& [a, b] : v) {
    if (b <= a) continue;
    if (!out.empty() && a <= out.back().second) out.back().second = std::max(out.back().second, b);
    else out.emplace_back(a, b);
  }
  return out;
}

template <class T>
T length(const Spans<T>& v) {
  T n = 0;
  for (const auto& [a, b] : v) n += b - a;
  return n;
}

/// Length of the intersection of two unions (each sorted and disjoint).
template <class T>
T overlap(const Spans<T>& x, const Spans<T>& y) {
  T n = 0;
  for (size_t i = 0, j = 0; i < x.size() && j < y.size();) {
    const T a = std::max(x[i].first, y[j].first), b = std::min(x[i].second, y[j].second);
    if (b > a) n += b - a;
    if (x[i].second < y[j].second) ++i;
    else ++j;
  }
  return n;
}

}  // namespace autotune::prof
