#!/bin/sh
# relocate_libtcc.sh OBJCOPY INPUT.a OUTPUT.o CC...: merge the libtcc archive
# into one relocatable object, renaming libc's data symbols it references to
# chainerc's own (see src/user_kernels/meson.build and cpu_jit.cpp), and making
# every symbol but the libtcc API local (libtcc's globals such as `file` or
# `tok` must not clash with a program that links libchainerc.a); the API is
# renamed tcc_* -> ch_tcc_* (chainerc exports only ch_* names).
set -eu
objcopy="$1"; in="$2"; out="$3"; shift 3
"$@" -r -nostdlib -o "$out.tmp.o" -Wl,--whole-archive "$in" -Wl,--no-whole-archive
"$objcopy" --redefine-sym stdout=ch_tcc_stdout --redefine-sym stderr=ch_tcc_stderr \
  --redefine-sym environ=ch_tcc_environ \
  --redefine-sym tcc_new=ch_tcc_new --keep-global-symbol=ch_tcc_new \
  --redefine-sym tcc_delete=ch_tcc_delete --keep-global-symbol=ch_tcc_delete \
  --redefine-sym tcc_set_error_func=ch_tcc_set_error_func --keep-global-symbol=ch_tcc_set_error_func \
  --redefine-sym tcc_set_options=ch_tcc_set_options --keep-global-symbol=ch_tcc_set_options \
  --redefine-sym tcc_set_output_type=ch_tcc_set_output_type --keep-global-symbol=ch_tcc_set_output_type \
  --redefine-sym tcc_compile_string=ch_tcc_compile_string --keep-global-symbol=ch_tcc_compile_string \
  --redefine-sym tcc_add_symbol=ch_tcc_add_symbol --keep-global-symbol=ch_tcc_add_symbol \
  --redefine-sym tcc_relocate=ch_tcc_relocate --keep-global-symbol=ch_tcc_relocate \
  --redefine-sym tcc_get_symbol=ch_tcc_get_symbol --keep-global-symbol=ch_tcc_get_symbol \
  "$out.tmp.o" "$out"
rm -f "$out.tmp.o"
