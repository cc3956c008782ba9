# Codec micro-benchmark: encode/decode MB/s of each ExZarr codec against numcodecs (the same C
# libraries called from Python) on the same data in the same run; median of several repetitions.
#
#   MIX_ENV=prod mix run bench/codecs.exs [reps]
#
# Data: ~8 MB of float64, a smooth field plus noise. MB/s is decoded megabytes (10^6) per second.

alias ExZarr.Codec.Registry

reps =
  case System.argv() do
    [n] -> String.to_integer(n)
    _ -> 7
  end

n = 1_000_000
:rand.seed(:exsss, {1, 2, 3})

data =
  for i <- 0..(n - 1), into: <<>> do
    <<:math.sin(i / 1000) * :math.cos(i / 77) * 100 + :rand.normal() * 0.01::float-64-little>>
  end

# {label, numcodecs config, kind (:bytes for compressors, :array for filters), slow?}
configs = [
  {"zstd level 1", %{"id" => "zstd", "level" => 1}, :bytes, false},
  {"zstd level 3 + checksum", %{"id" => "zstd", "level" => 3, "checksum" => true}, :bytes, false},
  {"blosc lz4 shuffle", %{"id" => "blosc", "cname" => "lz4", "clevel" => 5, "shuffle" => 1},
   :bytes, false},
  {"blosc zstd bitshuffle", %{"id" => "blosc", "cname" => "zstd", "clevel" => 3, "shuffle" => 2},
   :bytes, false},
  {"blosc blosclz noshuffle",
   %{"id" => "blosc", "cname" => "blosclz", "clevel" => 5, "shuffle" => 0}, :bytes, false},
  {"lz4", %{"id" => "lz4", "acceleration" => 1}, :bytes, false},
  {"gzip level 1", %{"id" => "gzip", "level" => 1}, :bytes, false},
  {"gzip level 6", %{"id" => "gzip", "level" => 6}, :bytes, false},
  {"zlib level 1", %{"id" => "zlib", "level" => 1}, :bytes, false},
  {"bz2 level 1", %{"id" => "bz2", "level" => 1}, :bytes, true},
  {"lzma preset 1", %{"id" => "lzma", "preset" => 1}, :bytes, true},
  {"crc32c", %{"id" => "crc32c"}, :bytes, false},
  {"shuffle (8)", %{"id" => "shuffle", "elementsize" => 8}, :bytes, false},
  {"delta <f8", %{"id" => "delta", "dtype" => "<f8"}, :array, false},
  {"bitround 10", %{"id" => "bitround", "keepbits" => 10}, :array, false},
  {"quantize 3", %{"id" => "quantize", "digits" => 3, "dtype" => "<f8"}, :array, false},
  {"fixedscaleoffset -> i4",
   %{
     "id" => "fixedscaleoffset",
     "offset" => 0,
     "scale" => 1000,
     "dtype" => "<f8",
     "astype" => "<i4"
   }, :array, false},
  {"astype -> f4", %{"id" => "astype", "encode_dtype" => "<f4", "decode_dtype" => "<f8"}, :array,
   false}
]

median = fn list -> Enum.at(Enum.sort(list), div(length(list), 2)) end

time = fn fun, reps ->
  {times, outs} =
    Enum.map(1..reps, fn _ ->
      {us, {:ok, out}} = :timer.tc(fun)
      {us / 1.0e6, out}
    end)
    |> Enum.unzip()

  {median.(times), List.last(outs)}
end

ours =
  for {label, config, _kind, slow} <- configs do
    {:ok, spec, _} = Registry.from_v2(config)
    {:ok, module, v3} = Registry.resolve(spec)
    chunk = %{shape: {n}, dtype: :float64, fill_value: 0.0, decoded_size: byte_size(data)}
    {:ok, state} = module.init(v3, chunk)
    r = if slow, do: max(1, div(reps, 3)), else: reps
    {enc_s, enc} = time.(fn -> module.encode(data, state) end, r)
    enc = IO.iodata_to_binary(enc)
    {dec_s, dec} = time.(fn -> module.decode(enc, state) end, r)

    if config["id"] not in ["bitround", "quantize"] and dec != data,
      do: raise("#{label}: round trip failed")

    {label, enc_s, dec_s, byte_size(enc)}
  end

dir = Path.join(System.tmp_dir!(), "exzarr_bench_codecs")
File.mkdir_p!(dir)
data_file = Path.join(dir, "data.bin")
configs_file = Path.join(dir, "configs.json")
File.write!(data_file, data)

File.write!(
  configs_file,
  :jiffy.encode(
    for {_l, config, kind, slow} <- configs do
      %{"config" => config, "kind" => Atom.to_string(kind)}
      |> then(&if(slow, do: Map.put(&1, "slow", true), else: &1))
    end
  )
)

python =
  System.get_env("EXZARR_PYTHON") ||
    Path.join(String.trim(elem(System.cmd("scripts/setup", ["--venv-path"]), 0)), "bin/python")

{out, 0} =
  System.cmd(python, [Path.join(__DIR__, "codecs_peer.py"), data_file, configs_file, "#{reps}"])

theirs = :jiffy.decode(out, [:return_maps])

mbs = fn s -> byte_size(data) / 1.0e6 / s end
fmt = fn x -> :erlang.float_to_binary(x, decimals: 0) end
ratio = fn a, b -> :erlang.float_to_binary(a / b, decimals: 2) end

IO.puts("""
ExZarr vs numcodecs #{Application.spec(:ex_zarr, :vsn)} on #{fmt.(byte_size(data) / 1.0e6)} MB of float64 \
(median of #{reps} runs, #{max(1, div(reps, 3))} for bz2/lzma; MB/s of decoded data; ratio > 1: ExZarr faster)

| codec | encode ExZarr | encode numcodecs | ratio | decode ExZarr | decode numcodecs | ratio | size ExZarr / numcodecs |
|---|---:|---:|---:|---:|---:|---:|---:|\
""")

for {{label, enc_s, dec_s, size}, t} <- Enum.zip(ours, theirs) do
  IO.puts(
    "| #{label} | #{fmt.(mbs.(enc_s))} | #{fmt.(mbs.(t["encode_s"]))} | #{ratio.(t["encode_s"], enc_s)} " <>
      "| #{fmt.(mbs.(dec_s))} | #{fmt.(mbs.(t["decode_s"]))} | #{ratio.(t["decode_s"], dec_s)} " <>
      "| #{size} / #{t["size"]} |"
  )
end
