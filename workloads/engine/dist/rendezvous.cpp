#include "workloads/engine/dist/rendezvous.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "knobs/error.h"

namespace autotune::dist {

namespace {

UsageError not_hostlist(const std::string& text) {
  return UsageError(fmt::format("'{}' is not a Slurm hostlist (e.g. node[1-4],login1)", text));
}

/// One comma-separated part inside brackets: "1-2" or "07" → its numbers as text, zero-padding kept.
void expand_range(const std::string& prefix, const std::string& range, const std::string& suffix, const std::string& text,
                  std::vector<std::string>& out) {
  const auto dash = range.find('-');
  const std::string lo = range.substr(0, dash), hi = dash == std::string::npos ? lo : range.substr(dash + 1);
  const auto digits = [](const std::string& s) {
    return !s.empty() && s.size() < 10 && std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isdigit(c); });
  };
  if (!digits(lo) || !digits(hi) || std::stol(hi) < std::stol(lo)) throw not_hostlist(text);
  for (long n = std::stol(lo); n <= std::stol(hi); ++n) {
    std::string num = std::to_string(n);
    if (num.size() < lo.size()) num = std::string(lo.size() - num.size(), '0') + num;
    out.push_back(prefix + num + suffix);
  }
}

}  // namespace

std::vector<std::string> expand_hostlist(const std::string& text) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < text.size()) {
    // one host expression: up to the next comma outside brackets
    std::size_t j = i;
    int depth = 0;
    while (j < text.size() && (depth > 0 || text[j] != ',')) {
      depth += text[j] == '[' ? 1 : text[j] == ']' ? -1 : 0;
      if (depth < 0 || depth > 1) throw not_hostlist(text);
      ++j;
    }
    if (depth != 0 || j == i) throw not_hostlist(text);
    const std::string expr = text.substr(i, j - i);
    const auto open = expr.find('[');
    if (open == std::string::npos) {
      out.push_back(expr);
    } else {
      const auto close = expr.find(']', open);
      const std::string prefix = expr.substr(0, open), suffix = expr.substr(close + 1), inside = expr.substr(open + 1, close - open - 1);
      if (suffix.find('[') != std::string::npos || inside.empty()) throw not_hostlist(text);
      for (std::size_t a = 0, b; a <= inside.size(); a = b + 1) {
        b = inside.find(',', a);
        if (b == std::string::npos) b = inside.size();
        expand_range(prefix, inside.substr(a, b - a), suffix, text, out);
      }
    }
    i = j + 1;
  }
  if (out.empty()) throw not_hostlist(text);
  return out;
}

int tasks_on_node(const std::string& text, int node_id) {
  int node = 0;
  for (std::size_t a = 0, b; a < text.size(); a = b + 1) {
    b = text.find(',', a);
    if (b == std::string::npos) b = text.size();
    const std::string part = text.substr(a, b - a);
    int count = 0, repeat = 1;
    if (std::sscanf(part.c_str(), "%d(x%d)", &count, &repeat) < 1 || count < 1 || repeat < 1)
      throw UsageError(fmt::format("tasks per node '{}' is not Slurm's form (e.g. 2(x3),1)", text));
    if (node_id < node + repeat) return count;
    node += repeat;
  }
  throw UsageError(fmt::format("tasks per node '{}' names {} node(s); this is node {}", text, node, node_id));
}

std::string route_source_address(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), "9", &hints, &res); rc != 0 || !res)
    throw UsageError(fmt::format("MASTER_ADDR '{}' does not resolve here ({}): the ranks cannot meet", host, ::gai_strerror(rc)));
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  // A datagram socket's connect sends nothing: it only asks the kernel which route (and source address) it would use.
  const bool routed = fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0;
  ::freeaddrinfo(res);
  sockaddr_in me{};
  socklen_t len = sizeof me;
  const bool named = routed && ::getsockname(fd, reinterpret_cast<sockaddr*>(&me), &len) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!named) throw UsageError(fmt::format("MASTER_ADDR '{}': no route from this host ({})", host, std::strerror(err)));
  char buf[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &me.sin_addr, buf, sizeof buf);
  return buf;
}

std::string interface_address(const std::string& list) {
  const std::string name = list.substr(0, list.find(','));
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) throw UsageError(fmt::format("GLOO_SOCKET_IFNAME={}: cannot list this host's interfaces", list));
  std::vector<std::string> names;
  std::string found;
  for (ifaddrs* i = all; i; i = i->ifa_next) {
    if (!i->ifa_name) continue;
    if (std::find(names.begin(), names.end(), i->ifa_name) == names.end()) names.emplace_back(i->ifa_name);
    if (name == i->ifa_name && found.empty() && i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
      char buf[INET_ADDRSTRLEN] = {0};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, buf, sizeof buf);
      found = buf;
    }
  }
  ::freeifaddrs(all);
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw UsageError(fmt::format("GLOO_SOCKET_IFNAME={}: this host has no interface '{}'; it has: {}", list, name,
                                 fmt::join(names, ", ")));
  if (found.empty()) throw UsageError(fmt::format("GLOO_SOCKET_IFNAME={}: interface '{}' has no IPv4 address", list, name));
  return found;
}

}  // namespace autotune::dist
