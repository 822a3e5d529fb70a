#include "reports/apply.h"

#include "knobs/host_heap.h"

#include <gtest/gtest.h>

namespace autotune {
namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& l : v) s += l + "\n";
  return s;
}

TEST(Apply, DefaultsProduceNoSnippets) {
  Config c;
  c.set("batch_size", "64").set("threads", "default").set("precision", "fp32").set("optimizer_impl", "loop");
  const auto s = apply_snippets(c, "cuda", {{"batch_size", "64"}});
  EXPECT_TRUE(s.cpp.empty());
  EXPECT_TRUE(s.python.empty());
}

TEST(Apply, EachKnobMapsToItsLibTorchAndPythonCall) {
  Config c;
  c.set("precision", "amp_fp16")
      .set("optimizer_impl", "fused")
      .set("memory_format", "channels_last")
      .set("cudnn_benchmark", "true")
      .set("zero_grad", "none")
      .set("grad_accum", "4")
      .set("batch_size", "128");
  const auto s = apply_snippets(c, "cuda", {{"batch_size", "64"}});
  const std::string cpp = joined(s.cpp), py = joined(s.python);
  EXPECT_NE(cpp.find("at::autocast::set_autocast_dtype(at::kCUDA, at::kHalf);"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("at::_amp_update_scale_"), std::string::npos);
  EXPECT_NE(cpp.find("at::_fused_adamw_(p, g, m, v, /*max_exp_avg_sqs=*/{}, t, lr"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("p.set_data(p.contiguous(at::MemoryFormat::ChannelsLast));"), std::string::npos);
  EXPECT_NE(cpp.find("at::globalContext().setBenchmarkCuDNN(true);"), std::string::npos);
  EXPECT_NE(cpp.find("for (auto& q : params) q.mutable_grad().reset();"), std::string::npos);  // zero_grad=none, own AdamW
  EXPECT_NE(cpp.find("auto loss = criterion(model->forward(xs[i]), ys[i]) / accum;"), std::string::npos);
  EXPECT_NE(cpp.find("(loss * scale).backward();"), std::string::npos);  // fp16: scaled
  EXPECT_NE(cpp.find("at::_amp_update_scale_(scale, growth_tracker, found_inf"), std::string::npos);
  EXPECT_NE(cpp.find("const int64_t batch_size = 128;"), std::string::npos);
  EXPECT_NE(py.find("with torch.autocast(\"cuda\", dtype=torch.float16):"), std::string::npos) << py;
  EXPECT_NE(py.find("scaler = torch.amp.GradScaler(\"cuda\")"), std::string::npos);
  EXPECT_NE(py.find("torch.optim.AdamW(model.parameters(), lr=lr, fused=True)"), std::string::npos);
  EXPECT_NE(py.find("model = model.to(memory_format=torch.channels_last)"), std::string::npos);
  EXPECT_NE(py.find("torch.backends.cudnn.benchmark = True"), std::string::npos);
}

TEST(Apply, ZeroGradSaysTheValueItWasGiven) {
  // zeros is the one value away from PyTorch's default (set_to_none=True): its line must say false, not repeat the default.
  const auto z = apply_snippets(Config().set("zero_grad", "zeros"), "cpu", {{"zero_grad", "none"}});
  EXPECT_NE(joined(z.cpp).find("optimizer.zero_grad(/*set_to_none=*/false);"), std::string::npos) << joined(z.cpp);
  EXPECT_NE(joined(z.python).find("optimizer.zero_grad(set_to_none=False)"), std::string::npos) << joined(z.python);
  EXPECT_EQ(joined(z.python).find("set_to_none=True"), std::string::npos) << joined(z.python);
  EXPECT_TRUE(apply_snippets(Config().set("zero_grad", "none"), "cpu", {{"zero_grad", "none"}}).python.empty());
}

TEST(Apply, TheLearningRateLineComesBeforeTheWholeLoopThatUsesIt) {
  LrHint lr;
  lr.lr = 2e-3;
  lr.why = "√r rule";
  const auto s = apply_snippets(Config().set("batch_size", "256").set("log_every", "10"), "cpu", {{"batch_size", "64"}}, {}, lr);
  ASSERT_GE(s.python.size(), 2u);
  EXPECT_EQ(s.python[0].rfind("lr = 0.002", 0), 0u) << s.python[0];
  EXPECT_EQ(s.python[1].rfind("# One process, the whole training loop: batch_size=256 log_every=10", 0), 0u) << s.python[1];
  EXPECT_EQ(s.cpp[0].rfind("const double lr = 0.002;", 0), 0u) << s.cpp[0];
  EXPECT_NE(s.cpp[1].find("const int64_t batch_size = 256;"), std::string::npos) << s.cpp[1];
}

TEST(Apply, DataKnobsMapToTheLoaderAndDataLoaderArguments) {
  Config c;
  c.set("num_workers", "2").set("prefetch", "4").set("decode", "jpeg_crop_scale");
  const auto s = apply_snippets(c, "cpu", {});
  const std::string cpp = joined(s.cpp), py = joined(s.python);
  EXPECT_NE(cpp.find("autotune::data::BatchLoader loader(/*num_workers=*/2"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("jpeg_crop_scanline"), std::string::npos);
  EXPECT_NE(py.find("num_workers=2"), std::string::npos) << py;
  EXPECT_NE(py.find("prefetch_factor=4"), std::string::npos);
  EXPECT_NE(py.find("img.draft(\"RGB\""), std::string::npos);
  Config d;
  d.set("num_workers", "0").set("prefetch", "2").set("decode", "jpeg_full");  // the defaults: nothing to change
  EXPECT_TRUE(apply_snippets(d, "cpu", {}).cpp.empty());
}

TEST(Apply, AUserModelIsLoadedBuiltAndNamedInEverySnippet) {
  WorkloadInfo w;
  w.name = "resnet18";
  w.loss = "cross_entropy";
  w.model_file = "/models/resnet18.pt";
  w.python_factory = "torchvision.models:resnet18";
  w.python_kwargs = "num_classes=10";
  Config c;
  c.set("precision", "amp_bf16").set("optimizer_impl", "fused").set("memory_format", "channels_last").set("grad_accum", "2");
  const auto s = apply_snippets(c, "cuda", {}, apply_subject(w));
  const std::string cpp = joined(s.cpp), py = joined(s.python);
  // C++: the user's file, AdamW over its parameters, its loss; the forward of a script::Module everywhere.
  // The whole loop first (tests/integration/snippet_loop_test.py compiles and runs it), the other knobs' lines after.
  EXPECT_EQ(s.cpp.front().find("// One process, the whole training loop"), 0u) << cpp;
  EXPECT_NE(cpp.find("torch::jit::script::Module model = torch::jit::load(\"/models/resnet18.pt\");  // your model as tuned"),
            std::string::npos);
  EXPECT_NE(cpp.find("at::_fused_adamw_(p, g, m, v"), std::string::npos);
  EXPECT_NE(cpp.find("auto criterion = torch::nn::CrossEntropyLoss();"), std::string::npos);
  EXPECT_NE(cpp.find("auto loss = criterion(model.forward({xs[i]}).toTensor(), ys[i]) / accum;"), std::string::npos) << cpp;
  // channels_last in the loop: the 4-D parameters converted once, each batch as it is made.
  EXPECT_NE(cpp.find("for (auto& p : params)  // memory_format=channels_last"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find(".to(device).contiguous(at::MemoryFormat::ChannelsLast), y = "), std::string::npos) << cpp;
  EXPECT_EQ(cpp.find("model->"), std::string::npos) << "a script::Module has no operator->";
  EXPECT_NE(py.find("model = model.to(memory_format=torch.channels_last)"), std::string::npos) << py;
  EXPECT_NE(py.find("x = x.to(memory_format=torch.channels_last)"), std::string::npos) << py;
  // Python: the user's own factory and arguments, then their optimizer with the winner's implementation.
  EXPECT_NE(py.find("from torchvision.models import resnet18\nmodel = resnet18(num_classes=10).to(\"cuda\")"), std::string::npos)
      << py;
  EXPECT_NE(py.find("optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)"), std::string::npos);
  EXPECT_NE(py.find("loss = criterion(model(xb), yb) / 2"), std::string::npos) << py;
  EXPECT_EQ(py.find("optimizer = ", py.find("optimizer = ") + 1), std::string::npos) << "one optimizer line:\n" << py;
  // Nothing to change: no preamble either.
  Config d;
  d.set("precision", "fp32");
  EXPECT_TRUE(apply_snippets(d, "cuda", {}, apply_subject(w)).cpp.empty());
}

TEST(Apply, AModelThatMakesItsLossGetsTheTargetAndAFileClassIsImportedFromItsModule) {
  WorkloadInfo w;
  w.loss = "model";
  w.model_file = "gpt.pt";
  w.python_factory = "src/mygpt.py:GPT";
  Config c;
  c.set("precision", "amp_bf16").set("grad_accum", "4");
  const auto s = apply_snippets(c, "cpu", {}, apply_subject(w));
  const std::string cpp = joined(s.cpp), py = joined(s.python);
  EXPECT_NE(cpp.find("auto loss = model.forward({xs[i], ys[i]}).toTensor() / accum;"), std::string::npos) << cpp;
  EXPECT_EQ(cpp.find("criterion"), std::string::npos);
  // A file's factory is imported from its folder, whatever folder the snippet runs in.
  EXPECT_NE(py.find("import sys\nsys.path.insert(0, \"src\")  # the folder of mygpt.py, relative to where autotune ran\n"
                    "from mygpt import GPT\nmodel = GPT().to(\"cpu\")"),
            std::string::npos)
      << py;
  w.python_factory = "/home/me/src/mygpt.py:GPT";  // as the Python worker records it
  EXPECT_NE(joined(apply_snippets(c, "cpu", {}, apply_subject(w)).python)
                .find("import sys\nsys.path.insert(0, \"/home/me/src\")  # the folder of mygpt.py\nfrom mygpt import GPT\n"),
            std::string::npos);
  EXPECT_NE(py.find("    loss = model(xb, yb) / 4"), std::string::npos) << py;
  EXPECT_NE(py.find("for xb, yb in zip(x.chunk(4), y.chunk(4)):"), std::string::npos);
  EXPECT_EQ(py.find("criterion"), std::string::npos);
  // Without a recorded factory the snippet says where the model came from and what to fill in.
  w.python_factory.clear();
  EXPECT_NE(joined(apply_snippets(c, "cpu", {}, apply_subject(w)).python)
                .find("model = ...  # your model, the one saved as gpt.pt"),
            std::string::npos);
}

TEST(Apply, CpuBf16NamesTheCpuDevice) {
  Config c;
  c.set("precision", "amp_bf16");
  const auto s = apply_snippets(c, "cpu", {});
  EXPECT_NE(joined(s.cpp).find("at::autocast::set_autocast_enabled(at::kCPU, true);"), std::string::npos);
  EXPECT_NE(joined(s.python).find("with torch.autocast(\"cpu\", dtype=torch.bfloat16):"), std::string::npos);
}

TEST(Apply, HeapPolicyOnlyWhenTheWorkerAppliedIt) {
  const auto s = heap_snippets(host_heap::kApplied);
  EXPECT_NE(joined(s.cpp).find("mallopt(M_MMAP_THRESHOLD, 33554432);"), std::string::npos) << joined(s.cpp);
  EXPECT_NE(joined(s.cpp).find("mallopt(M_TRIM_THRESHOLD, 2147483647);"), std::string::npos);
  EXPECT_NE(joined(s.python).find("MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=2147483647 python train.py"),
            std::string::npos)
      << joined(s.python);
  // An older worker (no field) or a refused mallopt: nothing to copy.
  EXPECT_TRUE(heap_snippets("").cpp.empty());
  EXPECT_TRUE(heap_snippets("glibc malloc: mallopt refused M_TRIM_THRESHOLD; defaults kept").python.empty());
  EXPECT_NE(heap_note(host_heap::kApplied, 96.4).find("(the winner: 96 minor page faults per step)"), std::string::npos);
  EXPECT_EQ(heap_note(host_heap::kApplied, -1).find("minor page faults"), std::string::npos);
}

TEST(Apply, ATaskGetsItsWholeLoopAroundItsOwnFunctions) {
  // A task file (--task): the loop imports it, uses the functions it defines and the defaults for the rest, and carries
  // the loader and optimizer settings; there is no C++ loop for a Python task.
  ApplySubject t;
  t.python_task = "/home/u/proj/train.py";
  t.task_functions = {"model", "dataset", "collate", "optimizer"};
  Config c;
  c.set("num_workers", "2").set("prefetch", "4").set("optimizer_impl", "foreach").set("grad_accum", "2");
  const auto s = apply_snippets(c, "cpu", {{"num_workers", "0"}, {"prefetch", "2"}, {"optimizer_impl", "loop"}, {"grad_accum", "1"}}, t);
  const std::string py = joined(s.python);
  EXPECT_TRUE(s.cpp.empty()) << joined(s.cpp);
  EXPECT_NE(py.find("sys.path.insert(0, \"/home/u/proj\")"), std::string::npos) << py;
  EXPECT_NE(py.find("import train as task"), std::string::npos);
  EXPECT_NE(py.find("optimizer = task.optimizer(model.parameters())"), std::string::npos);
  EXPECT_NE(py.find("group[\"foreach\"] = True"), std::string::npos);
  EXPECT_NE(py.find("collate_fn=task.collate, num_workers=2, persistent_workers=True, prefetch_factor=4"), std::string::npos) << py;
  EXPECT_NE(py.find("def loss_of(model, batch):"), std::string::npos);  // no loss(): the worker's default
  EXPECT_NE(py.find("if len(pending) < 2:"), std::string::npos);
  EXPECT_NE(py.find("shuffle=True"), std::string::npos);  // no sampler(): a random order

  t.task_functions = {"model", "dataset", "loss", "sampler"};  // its own loss and sampler, AdamW by default
  const std::string py2 = joined(apply_snippets(Config().set("batch_size", "8"), "cpu", {{"batch_size", "16"}}, t).python);
  EXPECT_NE(py2.find("loss = task.loss(model, b)"), std::string::npos) << py2;
  EXPECT_NE(py2.find("sampler=task.sampler(dataset)"), std::string::npos);
  EXPECT_EQ(py2.find("shuffle=True"), std::string::npos);
  EXPECT_NE(py2.find("torch.optim.AdamW(model.parameters(), lr=lr)"), std::string::npos);
  EXPECT_NE(py2.find("batch_size=8"), std::string::npos);

  t.task_lightning = "Lit";  // a LightningModule: the Trainer's arguments carry the config
  const std::string lit = joined(
      apply_snippets(Config().set("precision", "amp_bf16").set("grad_accum", "4"), "cuda", {{"grad_accum", "1"}}, t).python);
  EXPECT_NE(lit.find("L.Trainer(max_epochs=1, accelerator=\"gpu\", devices=1, precision=\"bf16-mixed\", accumulate_grad_batches=4"),
            std::string::npos)
      << lit;
  EXPECT_NE(lit.find("theirs = model.train_dataloader()"), std::string::npos);
}

}  // namespace
}  // namespace autotune
