#include "knobs/config.h"

#include <gtest/gtest.h>

#include "knobs/did_you_mean.h"
#include "knobs/error.h"
#include "knobs/knob.h"
#include "tests/support/expect_throw_msg.h"

namespace autotune {
namespace {

TEST(DidYouMean, EditDistanceAndClosest) {
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3);
  EXPECT_EQ(edit_distance("", "abc"), 3);
  EXPECT_EQ(edit_distance("mpl", "mlp"), 1);  // a transposition is one typo
  EXPECT_EQ(closest_match("mpl", {"mlp", "resnet18"}), "mlp");
  EXPECT_EQ(closest_match("batch_sise", {"batch_size", "threads"}), "batch_size");
  EXPECT_EQ(closest_match("batch", {"batch_size", "threads"}), "batch_size");  // prefix
  EXPECT_EQ(closest_match("zzzzzz", {"batch_size", "threads"}), "");           // nothing plausible
}

TEST(Config, SetsValidatedValuesAndCanonicalKey) {
  Config c;
  c.set_assignment("threads=2").set("batch_size", "128");
  EXPECT_EQ(c.key(), "batch_size=128 threads=2");  // sorted by knob
  EXPECT_EQ(c.get("threads"), "2");
  EXPECT_EQ(c.get("missing", "fallback"), "fallback");
  EXPECT_EQ(Config().key(), "(defaults)");
}

TEST(Config, UnknownKnobNamesKnownKnobsAndSuggests) {
  Config c;
  EXPECT_THROW_MSG(
      c.set("batch_sise", "64"), UsageError,
      "unknown knob 'batch_sise'; known knobs: batch_size, threads, precision, optimizer_impl, zero_grad, grad_accum, log_every, checkpointing, memory_format, pin_memory, decode, num_workers, prefetch, augment_device, cuda_graphs, cudnn_benchmark, ranks, bucket_mb, first_bucket_mb, "
      "grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook, compile (did you mean 'batch_size'?)");
  EXPECT_THROW_MSG(
      c.set("precisionx", "fp32"), UsageError,
      "unknown knob 'precisionx'; known knobs: batch_size, threads, precision, optimizer_impl, zero_grad, grad_accum, log_every, checkpointing, memory_format, pin_memory, decode, num_workers, prefetch, augment_device, cuda_graphs, cudnn_benchmark, ranks, bucket_mb, first_bucket_mb, "
      "grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook, compile (did you mean 'precision'?)");
  EXPECT_THROW_MSG(
      c.set("turbo", "on"), UsageError,
      "unknown knob 'turbo'; known knobs: batch_size, threads, precision, optimizer_impl, zero_grad, grad_accum, log_every, checkpointing, memory_format, pin_memory, decode, num_workers, prefetch, augment_device, cuda_graphs, cudnn_benchmark, ranks, bucket_mb, first_bucket_mb, "
      "grad_as_bucket_view, static_graph, broadcast_buffers, comm_hook, compile");
  EXPECT_THROW_MSG(c.set("precision", "fp8"), UsageError,
                   "knob 'precision': 'fp8' is not allowed; allowed: fp32, tf32, amp_fp16, amp_bf16");
}

TEST(Config, BadValuesNameTheDomain) {
  Config c;
  EXPECT_THROW_MSG(c.set("batch_size", "abc"), UsageError,
                   "knob 'batch_size': 'abc' is not allowed; allowed: integer 1..1048576");
  EXPECT_THROW_MSG(c.set("batch_size", "0"), UsageError, "knob 'batch_size': '0' is not allowed; allowed: integer 1..1048576");
  EXPECT_THROW_MSG(c.set("batch_size", "64x"), UsageError,
                   "knob 'batch_size': '64x' is not allowed; allowed: integer 1..1048576");
  EXPECT_THROW_MSG(c.set("threads", "defualt"), UsageError,
                   "knob 'threads': 'defualt' is not allowed; allowed: integer 1..1024 or default (did you mean 'default'?)");
  EXPECT_NO_THROW(c.set("threads", "default"));
}

TEST(Config, MalformedAssignment) {
  Config c;
  EXPECT_THROW_MSG(c.set_assignment("batch_size"), UsageError,
                   "'batch_size' is not a knob assignment; expected knob=value, e.g. batch_size=64");
  EXPECT_THROW_MSG(c.set_assignment("=64"), UsageError,
                   "'=64' is not a knob assignment; expected knob=value, e.g. batch_size=64");
  EXPECT_THROW_MSG(c.set_assignment("threads="), UsageError,
                   "'threads=' is not a knob assignment; expected knob=value, e.g. batch_size=64");
}

TEST(Config, NonDefaultCountResolvesWorkloadDefaults) {
  Config c;
  c.set("batch_size", "64").set("threads", "default");
  EXPECT_EQ(c.non_default_count({{"batch_size", "64"}}), 0);
  EXPECT_EQ(c.non_default_count({{"batch_size", "32"}}), 1);
  c.set("threads", "1");
  EXPECT_EQ(c.non_default_count({{"batch_size", "64"}}), 1);
}

TEST(KnobSpace, GridIsTheFullProductFirstAxisSlowest) {
  KnobSpace s;
  s.add_assignment("batch_size=32,64,128").add_assignment("threads=1, 2");
  EXPECT_EQ(s.grid_size(), 6u);
  const auto g = s.grid();
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[0].key(), "batch_size=32 threads=1");
  EXPECT_EQ(g[1].key(), "batch_size=32 threads=2");
  EXPECT_EQ(g[5].key(), "batch_size=128 threads=2");
  EXPECT_EQ(s.describe(), "batch_size={32,64,128} threads={1,2}");
}

TEST(KnobSpace, SingleAxisAndEmpty) {
  KnobSpace s;
  EXPECT_TRUE(s.grid().empty());
  s.add("threads", {"1"});
  ASSERT_EQ(s.grid().size(), 1u);
  EXPECT_EQ(s.grid()[0].key(), "threads=1");
}

TEST(KnobSpace, RejectsDuplicatesEmptyItemsAndBadValues) {
  KnobSpace s;
  EXPECT_THROW_MSG(s.add_assignment("batch_size=32,32"), UsageError, "knob 'batch_size': value '32' listed twice");
  EXPECT_THROW_MSG(s.add_assignment("batch_size=32,,64"), UsageError, "knob 'batch_size': empty value in '32,,64'");
  EXPECT_THROW_MSG(s.add_assignment("threads=1,many"), UsageError,
                   "knob 'threads': 'many' is not allowed; allowed: integer 1..1024 or default");
}

TEST(Knob, ApplicabilityNamesTheReason) {
  Knob k;
  k.name = "cudnn_benchmark";
  k.requires_.cuda = true;
  k.requires_.conv_model = true;
  TargetInfo cpu;
  EXPECT_EQ(k.not_applicable(cpu).value_or(""), "needs a CUDA device; none is available");
  TargetInfo gpu_mlp;
  gpu_mlp.cuda = true;
  gpu_mlp.gpu_count = 1;
  EXPECT_EQ(k.not_applicable(gpu_mlp).value_or(""), "applies to convolutional models only");
  gpu_mlp.conv_model = true;
  EXPECT_FALSE(k.not_applicable(gpu_mlp).has_value());
  // On a CPU with an MLP: the generic knobs apply, the conv/block/CUDA ones do not, and precision
  // applies but two of its values do not.
  for (const char* n : {"batch_size", "threads", "precision", "optimizer_impl", "zero_grad", "grad_accum", "log_every"})
    EXPECT_FALSE(find_knob(n).not_applicable(cpu).has_value()) << n;
  EXPECT_EQ(find_knob("checkpointing").not_applicable(cpu).value_or(""), "applies to models built of blocks (resnet, gpt) only");
  EXPECT_EQ(find_knob("memory_format").not_applicable(cpu).value_or(""), "applies to convolutional models only");
  EXPECT_EQ(find_knob("cudnn_benchmark").not_applicable(cpu).value_or(""), "needs a CUDA device; none is available");
  const Knob& p = find_knob("precision");
  EXPECT_FALSE(p.value_not_applicable("amp_bf16", cpu).has_value());
  EXPECT_EQ(p.value_not_applicable("amp_fp16", cpu).value_or(""), "needs a CUDA device; none is available");
  EXPECT_EQ(p.value_not_applicable("tf32", cpu).value_or(""), "needs a CUDA device; none is available");
  EXPECT_FALSE(p.value_not_applicable("amp_fp16", gpu_mlp).has_value());
}

// Which knobs each worker applies is the catalog's: the C++ worker's own decoders are the only knobs the Python worker
// lacks (it names none itself), and a worker that does name its knobs is held to its list.
TEST(Knob, WhichWorkerAppliesAKnobIsTheCatalogs) {
  TargetInfo images;
  images.cuda = true;
  images.gpu_count = 1;
  images.conv_model = images.image_data = images.block_model = images.data_cache = true;
  images.data = "images";
  TargetInfo python = images;
  python.python_trainer = true;
  for (const char* n : {"decode", "augment_device"}) {
    EXPECT_FALSE(find_knob(n).not_applicable(images).has_value()) << n;
    EXPECT_EQ(find_knob(n).not_applicable(python).value_or(""), "the Python trainer does not apply it (the C++ worker does: --trainer cpp)")
        << n;
  }
  for (const Knob& k : knob_catalog()) {
    if (k.name != "decode" && k.name != "augment_device") {
      EXPECT_FALSE(k.not_applicable(python).has_value()) << k.name;
    }
  }
  python.trainer_knobs = {"batch_size"};
  EXPECT_FALSE(find_knob("batch_size").not_applicable(python).has_value());
  EXPECT_EQ(find_knob("threads").not_applicable(python).value_or(""),
            "the worker does not apply it (it lists the knobs it applies, and this is not one)");
}

}  // namespace
}  // namespace autotune
