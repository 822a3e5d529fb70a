#pragma once
// What a run tuned and on what, as sentences every report shares (each format escapes for itself):
// the user's model (file, content hash, batch spec, FLOPs and where they come from) and the real data
// (path, size, what was read and skipped). Built-in workloads on synthetic data have neither.
#include <string>

#include "knobs/protocol.h"
#include "reports/summary.h"

namespace autotune {

/// "TorchScript model m.pt (sha256 …); batch: x: (B, 3, 32, 32) float32 …; 9.73e+06 FLOP/sample (counted from …)";
/// "" for a built-in workload.
std::string model_sentence(const WorkloadInfo& w);

/// "/data/imgs (image folder, jpeg_crop_scale): 1,024 images; the winner's measured trial read 640, skipped 3 (corrupt 2,
/// truncated 1; e.g. a/b.jpg: corrupt)"; "" for synthetic data.
std::string data_sentence(const DataStats& d);

/// When the winner's speedup over the baseline is not significant at 95% (its CI reaches 1.0× or below):
/// "not significant at 95%: …" with what would narrow it; "" when it is, when there is no speedup, or
/// when the winner is the baseline itself.
std::string speedup_caveat(const RunSummary& s);
/// Whether the reports flag the winner's speedup (speedup_caveat is not ""): there is one, the winner is
/// not the baseline, and its 95% interval reaches 1.0×.
bool speedup_not_significant(const RunSummary& s);

/// How the noise and drift limits relate to this host's own noise (NoiseCalibration): "this host's windows
/// varied by a median 5.8% …: noise limit raised from 5% to 12.1% …"; "" when not calibrating or before
/// enough configs were measured.
std::string noise_sentence(const RunSummary& s);

}  // namespace autotune
