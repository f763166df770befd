// The server's whole route table (one router shared read-only by every I/O thread).
#include "server/routes.hpp"

namespace vks::server {

http::router make_router(service& svc) {
  http::router r;
  add_info_routes(r, svc);
  add_sagemaker_routes(r, svc);
  add_openai_routes(r, svc);
  add_tokenize_routes(r, svc);
  add_anthropic_routes(r, svc);
  add_responses_routes(r, svc);
  return r;
}

}  // namespace vks::server
