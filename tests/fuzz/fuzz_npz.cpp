// Fuzz target: the .npz loader on arbitrary bytes, as a model checkpoint
// (ch_function_set_load_npz into Linear(4, 3) + Linear(3, 2)), as an Adam
// state (ch_optimizer_load_npz) and as single arrays
// (ch_serializers_load_npz_array of the keys a checkpoint holds); and the
// special files of fuzz_util.h (FIFO, directory, devices, symlinks) for every
// reader and both writers (a set with parameters and one without).
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
  static chfuzz::SpecialFiles specials;
  static ch_function_set* empty = [] {
    ch_function_set* s = nullptr;
    if (ch_function_set_new(&s) != CH_OK) std::abort();
    return s;
  }();
  if (const std::string* special = specials.pick(data, size)) {
    const char* p = special->c_str();
    chfuzz::check_refused(ch_function_set_load_npz(model.set, p), "ch_function_set_load_npz");
    chfuzz::check_refused(ch_optimizer_load_npz(model.adam, p), "ch_optimizer_load_npz");
    ch_array* a = nullptr;
    chfuzz::check_refused(ch_serializers_load_npz_array(&a, p, "l1/W"),
                          "ch_serializers_load_npz_array");
    if (a != nullptr) std::abort();
    // Writes: /dev/zero only for the archive without entries, written in
    // place (the other is renamed over the name: never aimed at /dev).
    if (std::string(p).rfind("/dev/", 0) != 0)
      chfuzz::check_refused(ch_function_set_save_npz(model.set, p, 0), "ch_function_set_save_npz");
    chfuzz::check_refused(ch_function_set_save_npz(empty, p, 0),
                          "ch_function_set_save_npz (empty)");
    return 0;
  }
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
