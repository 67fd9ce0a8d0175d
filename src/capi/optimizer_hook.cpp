// C API: ch_optimizer_set_update_hook (a step run before every update, e.g. the
// gradient allreduce of ch_optimizer_new_multi_node in libchainerc_mpi).
#include "capi/error_state.h"
#include "train_api.h"

using namespace chainerc;
using namespace chainerc::capi;

namespace {

struct UpdateHook {
  ch_optimizer_update_hook hook = nullptr;
  void* user_data = nullptr;
  void (*destroy)(void*) = nullptr;
  ~UpdateHook() {
    if (destroy) destroy(user_data);
  }
};

}  // namespace

namespace chainerc::capi {

void run_update_hook(const Optimizer& o, ch_optimizer* handle, const char* who) {
  std::shared_ptr<void> keep = o.update_hook;  // the hook may replace itself
  const auto* h = static_cast<const UpdateHook*>(keep.get());
  CallbackErrorScope errors;
  ch_status st = h->hook(h->user_data, handle);
  if (st == CH_OK) return;
  errors.keep_callback_error();
  const std::string& msg = error_state().message;
  throw CallbackFailure(st, std::string(who) + ": " +
                                (msg.empty() ? "the update hook returned status " +
                                                   std::to_string(st) + " without a message"
                                             : msg));
}

}  // namespace chainerc::capi

extern "C" {

ch_status ch_optimizer_set_update_hook(ch_optimizer* optimizer, ch_optimizer_update_hook hook,
                                       void* user_data, void (*destroy)(void* user_data)) {
  CH_API_BEGIN
  OptimizerPtr o = optimizer_of(optimizer, __func__, "optimizer");
  if (hook && o->step_in_backward)
    fail(CH_ERR_INVALID_ARGUMENT, __func__, ": optimizer '", o->name(),
         "' takes its step in backward (ch_optimizer_set_step_in_backward), which an update hook "
         "could not see; turn that off first");
  std::shared_ptr<UpdateHook> h;
  if (hook) {
    h = std::make_shared<UpdateHook>();
    h->hook = hook;
    h->user_data = user_data;
    h->destroy = destroy;  // set last: nothing below can fail
  }
  o->update_hook = std::move(h);
  CH_API_END
}

}  // extern "C"
