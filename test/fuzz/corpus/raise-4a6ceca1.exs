# ExZarr fuzz regression case: raises ArgumentError in ExZarr.Native.copy_regions/4
# first seen at step :seed_write: {:raise, %{frame: "ExZarr.Native.copy_regions/4 (:)", kind: ArgumentError, message: "argument error"}}
# found by the fuzzer (seed 3), written small by hand: a chunk shape of 2^64 + 1 elements, then a partial write
%{
  kind: :api,
  ops: [],
  seed_write: true,
  setup:
    {:create, [shape: {9}, chunks: {18_446_744_073_709_551_617}, dtype: :int16, compressor: nil]}
}
