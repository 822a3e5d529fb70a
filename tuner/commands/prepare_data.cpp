// autotune prepare-data: an image folder decoded once into a memory-mappable cache (decode=cache), or text
// made into a byte-level token file (one token per byte) for the token workloads.
#include <fmt/format.h>

#include <memory>
#include <ostream>

#include "data/cache_file.h"
#include "data/tokens.h"
#include "knobs/error.h"
#include "tuner/commands/command.h"
#include "tuner/commands/range_check.h"

namespace autotune::cli {

Command prepare_data_command() {
  auto prep = std::make_shared<data::PrepareOptions>();
  auto text = std::make_shared<std::vector<std::string>>();
  return {"prepare-data",
          "decode an image folder once into a memory-mappable cache file (for decode=cache), or make text into a byte-level "
          "token file (--tokens-from) for gpt-mini / gpt2-124m --data",
          [prep, text](CLI::App* c) {
            c->add_option("--from", prep->from, "image folder, ImageNet layout: DIR/<class>/<image>.jpg");
            c->add_option("--tokens-from", *text,
                          "text files or folders (repeatable): every byte one token (vocabulary 256), files in sorted order");
            c->add_option("--to", prep->to, "cache file to write (refused if it exists, unless --force)")->required();
            c->add_option("--size", prep->side, "side S of the stored S×S images (shorter side resized to S, centre square)")
                ->capture_default_str()
                ->check(within(8, 4096));
            c->add_flag("--force", prep->force, "replace an existing --to file");
            c->add_option("--threads", prep->threads, "decoding threads (default: all cores)")->check(within(0, 1024));
            c->add_option("--max-bad-share", prep->max_bad_share, "fail when more than this share of files is bad")
                ->capture_default_str()
                ->check(within(0.0, 1.0));
          },
          [prep, text](std::ostream& o) {
            if (prep->from.empty() == text->empty())
              throw UsageError("give one source: --from IMAGE_FOLDER (a cache) or --tokens-from TEXT... (a token file)");
            if (!text->empty()) {
              const data::ByteTokensReport r = data::write_byte_tokens(*text, prep->to, prep->force);
              o << fmt::format("wrote {} byte tokens from {} files to {} ({:.1f} MiB)\n", r.tokens, r.files, prep->to,
                               static_cast<double>(2 * r.tokens) / (1 << 20));
              return 0;
            }
            const data::PrepareReport r = data::prepare_cache(*prep);
            o << fmt::format("wrote {} images of {}×{} to {} ({:.1f} MiB) in {:.1f} s ({:.0f} images/s); {}\n", r.written,
                             prep->side, prep->side, prep->to, static_cast<double>(r.bytes) / (1 << 20), r.seconds,
                             r.seconds > 0 ? static_cast<double>(r.written) / r.seconds : 0.0, r.bad);
            return 0;
          }};
}

}  // namespace autotune::cli
