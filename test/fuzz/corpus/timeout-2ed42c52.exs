# ExZarr fuzz regression case: get_slice takes longer than the step time limit (a string array with an empty axis walked its 2^32-long axis: fixed in Codec.Items)
# first seen at step {:get_slice, :whole}: :timeout
# found as case 344 of seed 347465 (EXZARR_FUZZ_SEED=347465) or while shrinking it, 2 shrinks
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 883, [], false}},
    {:set_slice, :fit, {:box, 286, [], false}},
    {:read_chunk, {:chunk, 929}},
    {:open, [zarr_format: -9_223_372_036_854_775_809, use_consolidated: 2_147_483_647]},
    {:open_group, []},
    {:attributes, :delete, {18_446_744_073_709_551_616, -2_147_483_648}},
    {:chunk_stream, []},
    {:resize, {:delta, [-3]}},
    {:get_slice, {:box, 740, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 2,
       dtype: :string,
       shape: {4_294_967_296, 0, 8},
       compressor: %{id: "zstd", level: 1},
       order: "C",
       endian: :big,
       chunks: {1, 1, 1}
     ]}
}
