#include "knobs/warm_protocol.h"

#include <sched.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

extern char** environ;

namespace autotune::warm {

namespace {

std::string host_name() {
  char buf[256] = {};
  ::gethostname(buf, sizeof buf - 1);
  return buf;
}

unsigned long net_namespace() {
  struct stat st {};
  return ::stat("/proc/self/ns/net", &st) == 0 ? static_cast<unsigned long>(st.st_ino) : 0;
}

std::string current_folder() {
  std::string buf(4096, '\0');
  return ::getcwd(buf.data(), buf.size()) ? std::string(buf.c_str()) : std::string();
}

bool ours(const std::string& name) {
  return name == kSocketVar || name == kPidVar;
}

/// Writes all of `data`, retrying after signals.
bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t k = ::send(fd, data, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    data += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

nlohmann::json to_json(const Request& r) {
  return {{"host", r.host}, {"netns", r.netns}, {"uid", r.uid}, {"exe", r.exe}, {"argv", r.argv}, {"env", r.env},
          {"cwd", r.cwd}, {"cpus", r.cpus}};
}

Request from_json(const nlohmann::json& j) {
  Request r;
  r.host = j.at("host").get<std::string>();
  r.netns = j.at("netns").get<unsigned long>();
  r.uid = j.at("uid").get<unsigned>();
  r.exe = j.at("exe").get<std::string>();
  r.argv = j.at("argv").get<std::vector<std::string>>();
  r.env = j.at("env").get<std::map<std::string, std::string>>();
  r.cwd = j.at("cwd").get<std::string>();
  r.cpus = j.at("cpus").get<std::vector<int>>();
  return r;
}

/// Receives into `data` (appending) and collects any descriptors passed; false at the end or on an error.
bool receive_some(int conn, std::string& data, std::vector<int>& fds) {
  char buf[1 << 16];
  alignas(cmsghdr) char control[CMSG_SPACE(3 * sizeof(int))];
  iovec iov{buf, sizeof buf};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
  if (n <= 0) return false;
  data.append(buf, static_cast<size_t>(n));
  return true;
}

/// The process environment as a map.
std::map<std::string, std::string> environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    const char* eq = std::strchr(*e, '=');
    if (eq) env[std::string(*e, static_cast<size_t>(eq - *e))] = eq + 1;
  }
  return env;
}

}  // namespace

Request this_process(const std::string& exe, std::vector<std::string> argv) {
  Request r;
  r.host = host_name();
  r.netns = net_namespace();
  r.uid = ::getuid();
  r.exe = exe;
  r.argv = std::move(argv);
  r.env = environment();
  for (auto it = r.env.begin(); it != r.env.end();) it = ours(it->first) ? r.env.erase(it) : std::next(it);
  r.cwd = current_folder();
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0)
    for (int c = 0; c < CPU_SETSIZE; ++c)
      if (CPU_ISSET(c, &set)) r.cpus.push_back(c);
  return r;
}

bool per_command(const std::string& name) {
  static const std::set<std::string> names = {
      "OMP_NUM_THREADS", "MKL_NUM_THREADS", "CUDA_VISIBLE_DEVICES", "RANK", "LOCAL_RANK", "WORLD_SIZE",
      "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "SLURM_NTASKS", "SLURM_PROCID", "PWD", "OLDPWD", "SHLVL", "_",
      "AUTOTUNE_VERBOSE", "AUTOTUNE_LAUNCHER", "AUTOTUNE_WARM_SOCKET", "AUTOTUNE_WARM_PID", kSocketVar, kPidVar};
  return names.count(name) > 0;
}

std::string refusal(const Request& request, const Request& mine) {
  const auto& server_env = mine.env;
  if (request.host != mine.host) return "another host (" + request.host + ", here " + mine.host + ")";
  if (request.netns != mine.netns) return "another network namespace";
  if (request.uid != mine.uid) return "another user";
  if (request.exe != mine.exe) return "another worker binary (" + request.exe + ", here " + mine.exe + ")";
  std::vector<std::string> differ;
  for (const auto& [k, v] : request.env)
    if (!per_command(k) && (!server_env.count(k) || server_env.at(k) != v)) differ.push_back(k);
  for (const auto& [k, v] : server_env)
    if (!per_command(k) && !request.env.count(k)) differ.push_back(k);
  if (differ.empty()) return "";
  std::string why = "environment differs in ";
  for (size_t i = 0; i < differ.size() && i < 5; ++i) why += (i ? ", " : "") + differ[i];
  return why;
}

bool send_request(int sock, const Request& request) {
  const std::string body = to_json(request).dump();
  const uint32_t size = htonl(static_cast<uint32_t>(body.size()));
  std::string wire(reinterpret_cast<const char*>(&size), sizeof size);
  wire += body;
  // The descriptors ride on the first bytes; the rest follows as plain data.
  int fds[3] = {0, 1, 2};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof fds)] = {};
  iovec iov{wire.data(), wire.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof fds);
  std::memcpy(CMSG_DATA(c), fds, sizeof fds);
  ssize_t n;
  do n = ::sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  return write_all(sock, wire.data() + n, wire.size() - static_cast<size_t>(n));
}

std::optional<Request> receive_request(int conn, int fds[3]) {
  std::string data;
  std::vector<int> got;
  size_t want = 0;
  while (want == 0 || data.size() < want) {
    if (!receive_some(conn, data, got)) break;
    if (want == 0 && data.size() >= 4) {
      uint32_t size;
      std::memcpy(&size, data.data(), 4);
      want = 4 + ntohl(size);
    }
  }
  std::optional<Request> r;
  if (want > 0 && data.size() >= want && got.size() == 3) {
    try {
      r = from_json(nlohmann::json::parse(data.substr(4, want - 4)));
    } catch (const std::exception&) {
    }
  }
  if (!r) {
    for (int fd : got) ::close(fd);
    return std::nullopt;
  }
  for (int i = 0; i < 3; ++i) fds[i] = got[static_cast<size_t>(i)];
  return r;
}

bool send_line(int fd, const std::string& json) {
  const std::string line = json + "\n";
  return write_all(fd, line.data(), line.size());
}

std::optional<std::string> read_line(int fd, std::string& buffer) {
  size_t nl;
  while ((nl = buffer.find('\n')) == std::string::npos) {
    char buf[512];
    ssize_t n;
    do n = ::recv(fd, buf, sizeof buf, 0);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return std::nullopt;
    buffer.append(buf, static_cast<size_t>(n));
  }
  std::string line = buffer.substr(0, nl);
  buffer.erase(0, nl + 1);
  return line;
}

}  // namespace autotune::warm
