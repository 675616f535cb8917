// One API request to one response, without sockets: path routing to the
// served types, query parameters, JSON and protobuf bodies, the verbs (get,
// list, watch, create, update, delete, deletecollection) over the Store,
// and errors as metav1.Status. A watch's response carries a WatchStream the
// transport drains.
#ifndef DEVMGR_APISERVER_HANDLER_H_
#define DEVMGR_APISERVER_HANDLER_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "absl/time/time.h"
#include "apiserver/field_selector.h"
#include "apiserver/resource_type.h"
#include "apiserver/store.h"

namespace devmgr::apiserver {

struct ApiRequest {
  std::string method;                              // "GET", "POST", ...
  std::string path;                                // without the query
  std::multimap<std::string, std::string> params;  // the decoded query
  std::string content_type;
  std::string body;
};

// A watch's event stream: lines of JSON watch events ({"type":..., "object":...}).
// Confined to the thread that drains it.
class WatchStream {
 public:
  // Streams `initial` (already rendered lines) and then the changes of
  // `type` after revision `from` that `selector` and `ns` select, until
  // `end` or the store's Shutdown. `store` must outlive the stream.
  WatchStream(const Store& store, const ResourceType& type, std::string ns, FieldSelector selector,
              int64_t from, std::deque<std::string> initial, absl::Time end);
  WatchStream(const WatchStream&) = delete;
  WatchStream& operator=(const WatchStream&) = delete;

  // Appends the next lines to *out, waiting at most until `wait_until` for
  // one. Returns false once the stream has ended (*out may still hold its
  // last lines, e.g. an ERROR event).
  bool Poll(absl::Time wait_until, std::string* out);

 private:
  const Store& store_;
  const ResourceType& type_;
  const std::string ns_;
  const FieldSelector selector_;
  const absl::Time end_;
  int64_t last_ = 0;
  std::deque<std::string> pending_;
  bool ended_ = false;
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  std::unique_ptr<WatchStream> watch;  // set for a watch: stream it after the headers
};

// Routes and serves `request`. `now` bounds watches (timeoutSeconds).
// Unserved paths (including other versions of resource.k8s.io) get the
// real server's answer, Go's http.NotFound: 404 "404 page not found".
ApiResponse Handle(Store& store, const ApiRequest& request, absl::Time now);

// The JSON of one watch event line (with its trailing newline).
std::string WatchEventLine(const std::string& type, const nlohmann::json& object);

}  // namespace devmgr::apiserver

#endif  // DEVMGR_APISERVER_HANDLER_H_
