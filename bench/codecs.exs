# Codec micro-benchmark: encode/decode MB/s of each ExZarr codec against numcodecs (the same C
# libraries called from Python) on the same data in the same run. Runs of both sides are
# interleaved and the best of several is reported: on a shared, loaded machine the best run is
# the one closest to the code's own speed (the median mostly measures the neighbours).
#
#   MIX_ENV=prod mix run bench/codecs.exs [reps] [only]
#
# `only`: run just the codecs whose label starts with one of these comma-separated prefixes
# (`bench/codecs.exs 7 zfpy,pcodec`).
#
# Data: ~8 MB of float64, a smooth field plus noise. MB/s is decoded megabytes (10^6) per second.

alias ExZarr.Codec.Registry

{reps, only} =
  case System.argv() do
    [n, only] -> {String.to_integer(n), String.split(only, ",", trim: true)}
    [n] -> {String.to_integer(n), nil}
    _ -> {7, nil}
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
   false},
  # zfp (libzfp on both sides) and pcodec (the Rust crate pco on both sides). zfp's accuracy
  # mode is lossy, so its round trip is not compared; the reversible mode and pcodec are.
  {"zfpy accuracy 0.01", %{"id" => "zfpy", "mode" => 4, "tolerance" => 0.01}, :array, false},
  {"zfpy reversible", %{"id" => "zfpy", "mode" => 4, "tolerance" => -1}, :bytes, false},
  {"pcodec level 3", %{"id" => "pcodec", "level" => 3}, :bytes, false},
  {"pcodec level 8", %{"id" => "pcodec", "level" => 8}, :bytes, false}
]

configs =
  if only,
    do: Enum.filter(configs, fn {label, _, _, _} -> String.starts_with?(label, only) end),
    else: configs

best = &Enum.min/1

dir = Path.join(System.tmp_dir!(), "exzarr_bench_codecs")
File.mkdir_p!(dir)
data_file = Path.join(dir, "data.bin")
configs_file = Path.join(dir, "configs.json")
File.write!(data_file, data)

File.write!(
  configs_file,
  :jiffy.encode(
    for {_l, config, kind, _slow} <- configs,
        do: %{"config" => config, "kind" => Atom.to_string(kind)}
  )
)

python =
  System.get_env("EXZARR_PYTHON") ||
    Path.join(
      String.trim(elem(System.cmd(Path.expand("scripts/setup"), ["--venv-path"]), 0)),
      "bin/python"
    )

port =
  Port.open({:spawn_executable, python}, [
    :binary,
    {:line, 4096},
    args: [Path.join(__DIR__, "codecs_peer.py"), data_file, configs_file]
  ])

ask = fn line ->
  Port.command(port, line <> "\n")

  receive do
    {^port, {:data, {:eol, answer}}} -> answer |> Float.parse() |> elem(0)
  end
end

receive do
  {^port, {:data, {:eol, "ready"}}} -> :ok
after
  60_000 -> raise "numcodecs peer did not start"
end

# Each repetition runs ExZarr then numcodecs on the same codec, so load changes on the
# machine hit both sides alike.
seconds = fn fun ->
  {us, {:ok, out}} = :timer.tc(fun)
  {max(us, 1) / 1.0e6, out}
end

rows =
  for {{label, config, kind, slow}, i} <- Enum.with_index(configs) do
    {:ok, spec, _} = Registry.from_v2(config)
    {:ok, module, v3} = Registry.resolve(spec)
    chunk = %{shape: {n}, dtype: :float64, fill_value: 0.0, decoded_size: byte_size(data)}
    {:ok, state} = module.init(v3, chunk)
    r = if slow, do: max(1, div(reps, 3)), else: reps

    enc_runs =
      for _ <- 1..r do
        {s, enc} = seconds.(fn -> module.encode(data, state) end)
        {{s, ask.("#{i} encode")}, IO.iodata_to_binary(enc)}
      end

    {enc_times, encs} = Enum.unzip(enc_runs)
    enc = List.last(encs)

    dec_runs =
      for _ <- 1..r do
        {s, dec} = seconds.(fn -> module.decode(enc, state) end)
        # Filters on floats are lossy (delta sums rounded differences); compressors are exact.
        if kind == :bytes and dec != data, do: raise("#{label}: round trip failed")
        {s, max(ask.("#{i} decode"), 1.0e-6)}
      end

    {ours_enc, theirs_enc} = Enum.unzip(enc_times)
    {ours_dec, theirs_dec} = Enum.unzip(dec_runs)

    {label, best.(ours_enc), best.(theirs_enc), best.(ours_dec), best.(theirs_dec),
     byte_size(enc), round(ask.("#{i} size"))}
  end

Port.close(port)

mb = byte_size(data) / 1.0e6
fmt = fn s -> :erlang.float_to_binary(mb / s, decimals: 0) end
ratio = fn ours, theirs -> :erlang.float_to_binary(theirs / ours, decimals: 2) end

IO.puts("""
ExZarr vs numcodecs on #{:erlang.float_to_binary(mb, decimals: 0)} MB of float64 \
(best of #{reps} interleaved runs, #{max(1, div(reps, 3))} for bz2/lzma; MB/s of decoded data; \
ratio = ExZarr speed / numcodecs speed)

| codec | encode ExZarr | encode numcodecs | ratio | decode ExZarr | decode numcodecs | ratio | bytes ExZarr / numcodecs |
|---|---:|---:|---:|---:|---:|---:|---:|\
""")

for {label, oe, te, od, td, size, their_size} <- rows do
  IO.puts(
    "| #{label} | #{fmt.(oe)} | #{fmt.(te)} | #{ratio.(oe, te)} | #{fmt.(od)} | #{fmt.(td)} " <>
      "| #{ratio.(od, td)} | #{size} / #{their_size} |"
  )
end
