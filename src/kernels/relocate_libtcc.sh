#!/bin/sh
# relocate_libtcc.sh OBJCOPY INPUT.a OUTPUT.o CC...: merge the libtcc archive
# into one relocatable object, renaming libc's data symbols it references to
# chainerc's own (see src/kernels/meson.build and cpu_jit.cpp), and making
# every symbol but the libtcc API local (libtcc's globals such as `file` or
# `tok` must not clash with a program that links libchainerc.a).
set -eu
objcopy="$1"; in="$2"; out="$3"; shift 3
"$@" -r -nostdlib -o "$out.tmp.o" -Wl,--whole-archive "$in" -Wl,--no-whole-archive
"$objcopy" --redefine-sym stdout=ch_tcc_stdout --redefine-sym stderr=ch_tcc_stderr \
  --redefine-sym environ=ch_tcc_environ \
  --keep-global-symbol=tcc_new --keep-global-symbol=tcc_delete \
  --keep-global-symbol=tcc_set_error_func --keep-global-symbol=tcc_set_options \
  --keep-global-symbol=tcc_set_output_type --keep-global-symbol=tcc_compile_string \
  --keep-global-symbol=tcc_add_symbol --keep-global-symbol=tcc_relocate \
  --keep-global-symbol=tcc_get_symbol "$out.tmp.o" "$out"
rm -f "$out.tmp.o"
