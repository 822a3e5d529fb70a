// autotune prepare-data: an image folder decoded once into a memory-mappable cache (decode=cache).
#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "data/cache_file.h"
#include "tuner/commands/command.h"

namespace autotune::cli {

Command prepare_data_command() {
  auto prep = std::make_shared<data::PrepareOptions>();
  return {"prepare-data", "decode an image folder once into a memory-mappable cache file (for decode=cache)",
          [prep](CLI::App* c) {
            c->add_option("--from", prep->from, "image folder, ImageNet layout: DIR/<class>/<image>.jpg")->required();
            c->add_option("--to", prep->to, "cache file to write (refused if it exists, unless --force)")->required();
            c->add_option("--size", prep->side, "side S of the stored S×S images (shorter side resized to S, centre square)")
                ->capture_default_str()
                ->check(CLI::Range(8, 4096));
            c->add_flag("--force", prep->force, "replace an existing --to file");
            c->add_option("--threads", prep->threads, "decoding threads (default: all cores)")->check(CLI::Range(0, 1024));
            c->add_option("--max-bad-share", prep->max_bad_share, "fail when more than this share of files is bad")
                ->capture_default_str()
                ->check(CLI::Range(0.0, 1.0));
          },
          [prep](std::ostream& o) {
            const data::PrepareReport r = data::prepare_cache(*prep);
            o << fmt::format("wrote {} images of {}×{} to {} ({:.1f} MiB) in {:.1f} s ({:.0f} images/s); {}\n", r.written,
                             prep->side, prep->side, prep->to, static_cast<double>(r.bytes) / (1 << 20), r.seconds,
                             r.seconds > 0 ? static_cast<double>(r.written) / r.seconds : 0.0, r.bad);
            return 0;
          }};
}

}  // namespace autotune::cli
