# ExZarr fuzz regression case: resize takes longer than the step time limit (an F-order :bytes array of 917,504-item chunks: every border chunk decoded, cut and encoded item by item; made 2-4x faster in Codec.Items, Codecs.VlenLayout and the native vlen split)
# first seen at step {:resize, {:delta, [-1]}}: :timeout
# found as case 17 of seed 73491 (EXZARR_FUZZ_SEED=73491) in make test (the file name of its signature was taken: a second case of that kind)
%{
  kind: :api,
  ops: [
    {:open, []},
    {:get_slice, :whole},
    {:get_slice, {:box, 45, [], false}},
    {:set_slice, :fit, {:box, 427, [], false}},
    {:read_chunk, {:chunk, 591}},
    {:get_slice, {:box, 421, [chnks: 6], false}},
    {:resize, {:delta, [-1]}},
    {:get_slice, {:box, 362, [], false}},
    {:get_slice, :whole}
  ],
  seed_write: true,
  setup:
    {:create,
     [
       zarr_format: 2,
       dtype: :bytes,
       shape: {5, 1_099_511_627_776, 13},
       compressor: %{id: "adler32"},
       order: "F",
       endian: :little,
       chunks: {65536, 2, 7}
     ]}
}
