# ExZarr fuzz regression case: raises SystemLimitError in ExZarr.DType.pad/2
# first seen at step :setup: {:raise, %{frame: "ExZarr.DType.pad/2 (lib/ex_zarr/dtype.ex:889)", kind: SystemLimitError, message: "construction of binary failed: segment 2 of type 'integer': the size 590295810358705651744 is too large"}}
# found as case 678 of seed 1 (EXZARR_FUZZ_SEED=1), 15 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 0, [], false}},
    {:set_slice, :fit, {:box, 0, [], false}},
    {:read_chunk, {:chunk, 0}},
    {:resize, {:delta, [0]}},
    {:get_slice, {:box, 0, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 3,
       dtype: {:fixed_bytes, 9_223_372_036_854_775_807},
       shape: {0},
       compressor: nil,
       order: "C",
       endian: :little,
       chunks: {1}
     ]}
}
