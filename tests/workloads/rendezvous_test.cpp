// Where a multi-node trial's ranks meet and which address each talks on (workloads/engine/dist/rendezvous.h).
#include <gtest/gtest.h>

#include "knobs/error.h"
#include "workloads/engine/dist/rendezvous.h"

namespace autotune::dist {
namespace {

using V = std::vector<std::string>;

TEST(Rendezvous, SlurmHostlistsExpandAsScontrolShowHostnamesDoes) {
  EXPECT_EQ(expand_hostlist("atnode[1-2]"), (V{"atnode1", "atnode2"}));
  EXPECT_EQ(expand_hostlist("n[08-10],login1"), (V{"n08", "n09", "n10", "login1"}));
  EXPECT_EQ(expand_hostlist("gpu[1,3-4]x"), (V{"gpu1x", "gpu3x", "gpu4x"}));
  EXPECT_EQ(expand_hostlist("vm"), (V{"vm"}));
  for (const char* bad : {"", "a[1-", "a[2-1]", "a[x]", "a[1]]", ",a"}) EXPECT_THROW(expand_hostlist(bad), UsageError) << bad;
}

TEST(Rendezvous, TasksPerNodeInSlurmsCompressedForm) {
  EXPECT_EQ(tasks_on_node("1(x2)", 0), 1);
  EXPECT_EQ(tasks_on_node("1(x2)", 1), 1);
  EXPECT_EQ(tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(tasks_on_node("4", 0), 4);
  EXPECT_THROW(tasks_on_node("2(x3),1", 4), UsageError);
  EXPECT_THROW(tasks_on_node("two", 0), UsageError);
}

TEST(Rendezvous, TheAddressARankTalksOnIsItsRoutesSource) {
  EXPECT_EQ(route_source_address("127.0.0.1"), "127.0.0.1");  // loopback: the route leaves from loopback
  EXPECT_EQ(interface_address("lo"), "127.0.0.1");
  try {
    interface_address("nosuch0");
    ADD_FAILURE() << "an interface this host does not have was accepted";
  } catch (const UsageError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("GLOO_SOCKET_IFNAME=nosuch0: this host has no interface 'nosuch0'; it has: "), std::string::npos) << m;
    EXPECT_NE(m.find("lo"), std::string::npos) << m;
  }
  try {
    route_source_address("no-such-host.invalid");
    ADD_FAILURE() << "a rendezvous that does not resolve was accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("MASTER_ADDR 'no-such-host.invalid' does not resolve here"), std::string::npos);
  }
}

}  // namespace
}  // namespace autotune::dist
