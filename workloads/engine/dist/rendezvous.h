#pragma once
// Where the ranks of a multi-node trial meet, and which of this host's addresses a rank talks on, from what the
// launcher's environment says. LibTorch-free (tests/workloads/rendezvous_test.cpp runs it anywhere).
//  - Slurm names a step's nodes in its hostlist syntax ("atnode[1-2]", "gpu[01-04,07],login1"); the first is where
//    rank 0 runs, so it is the rendezvous when nothing else names one.
//  - Slurm gives the tasks per node as "2(x3),1" (two tasks on each of the first three nodes, one on the fourth).
//  - A rank binds the address the kernel would send from to reach the rendezvous (its route), or the interface
//    GLOO_SOCKET_IFNAME names: a host name that resolves to loopback, or to another network, is never used.
#include <string>
#include <vector>

namespace autotune::dist {

/// "atnode[1-2],login1" → {"atnode1", "atnode2", "login1"} (zero-padding kept: "n[08-10]" → n08, n09, n10).
/// Throws UsageError naming the text when it is not a hostlist.
std::vector<std::string> expand_hostlist(const std::string& hostlist);

/// The task count of node `node_id` in Slurm's "2(x3),1"; throws UsageError when the text or the id does not fit.
int tasks_on_node(const std::string& tasks_per_node, int node_id);

/// The IPv4 address this host would send from to reach `host` (resolved as getaddrinfo resolves it). Throws
/// UsageError in one line when `host` does not resolve or no route leads there.
std::string route_source_address(const std::string& host);

/// The IPv4 address of interface `name` (GLOO_SOCKET_IFNAME's form; the first of a comma list). Throws UsageError
/// naming the interfaces this host has when it has none of that name, or none with an IPv4 address.
std::string interface_address(const std::string& name);

}  // namespace autotune::dist
