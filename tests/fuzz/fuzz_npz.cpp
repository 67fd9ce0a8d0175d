// Fuzz target: the .npz loader on arbitrary bytes, as a model checkpoint
// (ch_function_set_load_npz into Linear(4, 3) + Linear(3, 2)), as an Adam
// state (ch_optimizer_load_npz) and as single arrays
// (ch_serializers_load_npz_array of the keys a checkpoint holds).
#include "fuzz_util.h"

namespace {

struct Model {
  ch_function_set* set = nullptr;
  ch_optimizer* adam = nullptr;
  Model() {
    ch_function* l1 = nullptr;
    ch_function* l2 = nullptr;
    if (ch_function_set_new(&set) != CH_OK ||
        ch_functions_linear_new(&l1, 4, 3, CH_FLOAT32, 1, 0, 0, nullptr, nullptr) != CH_OK ||
        ch_functions_linear_new(&l2, 3, 2, CH_FLOAT32, 1, 0, 0, nullptr, nullptr) != CH_OK ||
        ch_function_set_add_function(set, "l1", l1) != CH_OK ||
        ch_function_set_add_function(set, "l2", l2) != CH_OK ||
        ch_optimizer_adam_new(&adam, 0.001, 0.9, 0.999, 1, 1e-8) != CH_OK ||
        ch_optimizer_setup(adam, set) != CH_OK) {
      std::fprintf(stderr, "fuzz_npz: cannot build the model: %s\n", ch_error_message());
      std::abort();
    }
    ch_function_release(l1);
    ch_function_release(l2);
  }
  ~Model() {
    ch_optimizer_release(adam);
    ch_function_set_release(set);
  }
};

}  // namespace

int ch_fuzz_npz(const uint8_t* data, size_t size) {
  static chfuzz::MemFile file("ch_fuzz_npz");
  static Model model;
  const std::string& path = file.write(data, size);
  CH_FUZZ_CHECK(ch_function_set_load_npz(model.set, path.c_str()));
  CH_FUZZ_CHECK(ch_optimizer_load_npz(model.adam, path.c_str()));
  for (const char* key : {"l1/W", "l2/b", "t", "l1/W/m"}) {
    ch_array* a = nullptr;
    ch_status st = ch_serializers_load_npz_array(&a, path.c_str(), key);
    CH_FUZZ_CHECK(st);
    if (st == CH_OK)
      ch_array_release(a);
    else if (a != nullptr)
      std::abort();
  }
  return 0;
}

CH_FUZZ_ENTRY(ch_fuzz_npz)
