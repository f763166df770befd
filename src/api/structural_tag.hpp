// Structural-tag requests (vLLM, xgrammar's "structures + triggers" form): the object of
// response_format {"type": "structural_tag", "structures": [...], "triggers": [...]} or
// the value of structured_outputs.structural_tag, which vLLM takes as a JSON string (an
// object is accepted too). Each structure is {"begin": str, "schema": JSON schema object
// or boolean, "end": str}. xgrammar's newer {"format": {...}} form is refused as
// unsupported (501). The meaning is in text/grammar/structural_tag.hpp.
#pragma once

#include <string>

#include "api/json.hpp"
#include "base/result.hpp"
#include "text/grammar/structural_tag.hpp"

namespace vks::api {

// A bad shape or a tag text/grammar's validate() refuses is invalid_argument (400)
// naming the member under `param` ("response_format.structures[0].begin").
result<text::grammar::structural_tag> parse_structural_tag(const json& value, const std::string& param);

}  // namespace vks::api
