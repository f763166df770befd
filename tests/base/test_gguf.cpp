#include "catch.hpp"

#include <cstdlib>
#include <string>

#include "base/gguf.hpp"

namespace {
std::string shared_path(const std::string& rel) {
  const char* s = std::getenv("VKS_SHARED");
  return std::string(s ? s : "../shared") + "/" + rel;
}
}  // namespace

TEST_CASE("gguf reads stories260K metadata and tensors", "[base][gguf]") {
  auto f = vks::gguf::file::open(shared_path("models/stories260K/stories260K.gguf"));
  REQUIRE(f.ok());
  CHECK(f->version() == 3);
  CHECK(f->get_string("general.architecture") == "llama");
  CHECK(f->get_int("llama.embedding_length") == 64);
  CHECK(f->get_int("llama.block_count") == 5);
  const auto* toks = f->get_array("tokenizer.ggml.tokens");
  REQUIRE(toks != nullptr);
  CHECK(toks->items.size() == 512);
  const auto* emb = f->find_tensor("token_embd.weight");
  REQUIRE(emb != nullptr);
  CHECK(emb->dims.size() == 2);
  CHECK(emb->dims[0] == 64);
  CHECK(emb->dims[1] == 512);
  CHECK(emb->data.size() == 64 * 512 * 4);
}

TEST_CASE("gguf vocab-only file has metadata and no tensors", "[base][gguf]") {
  auto f = vks::gguf::file::open(shared_path("models/vocab/ggml-vocab-llama-spm.gguf"));
  REQUIRE(f.ok());
  CHECK(f->tensors().empty());
  CHECK(f->get_string("tokenizer.ggml.model") == "llama");
}

TEST_CASE("gguf rejects broken files with a clear error", "[base][gguf]") {
  auto good = vks::mapped_file::open(shared_path("models/stories260K/stories260K.gguf"));
  REQUIRE(good.ok());
  auto bytes = good->bytes();
  SECTION("wrong magic") {
    std::string junk = "NOPE and more bytes here";
    auto r = vks::gguf::file::parse(std::as_bytes(std::span(junk)));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == vks::errc::parse);
    CHECK(r.error().message.find("magic") != std::string::npos);
  }
  SECTION("every truncation fails cleanly") {
    for (size_t n : {size_t{3}, size_t{8}, size_t{24}, size_t{100}, size_t{5000}, bytes.size() / 2, bytes.size() - 1}) {
      auto r = vks::gguf::file::parse(bytes.first(n));
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == vks::errc::parse);
    }
  }
  SECTION("missing file") {
    auto r = vks::gguf::file::open("/nonexistent/x.gguf");
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == vks::errc::not_found);
  }
}
