defmodule ExZarr.Codecs.FiltersTest do
  use ExUnit.Case, async: true

  doctest ExZarr.Codecs.Astype
  doctest ExZarr.Codecs.Bitround
  doctest ExZarr.Codecs.Bytes
  doctest ExZarr.Codecs.Delta
  doctest ExZarr.Codecs.FixedScaleOffset
  doctest ExZarr.Codecs.Packbits
  doctest ExZarr.Codecs.Quantize
  doctest ExZarr.Codecs.Shuffle
  doctest ExZarr.Codecs.Transpose

  alias ExZarr.Codec.Registry
  alias ExZarr.Codecs.Numcodecs
  alias ExZarr.Test.Python

  @n 1000

  # {numcodecs filter config, input dtype, how Python generates the input}
  @cases [
    {%{"id" => "delta", "dtype" => "<i4"}, "<i4", "ints"},
    {%{"id" => "delta", "dtype" => "<i8", "astype" => "<i2"}, "<i8", "walk"},
    {%{"id" => "delta", "dtype" => "<u2"}, "<u2", "ints"},
    {%{"id" => "delta", "dtype" => "<f8"}, "<f8", "smooth"},
    {%{"id" => "delta", "dtype" => "<f4", "astype" => "<f4"}, "<f4", "special"},
    {%{"id" => "delta", "dtype" => "<f2"}, "<f2", "smooth"},
    {%{"id" => "delta", "dtype" => "|u1", "astype" => "<i2"}, "|u1", "ints"},
    {%{
       "id" => "fixedscaleoffset",
       "offset" => 1000,
       "scale" => 10,
       "dtype" => "<f8",
       "astype" => "|u1"
     }, "<f8", "near1000"},
    {%{
       "id" => "fixedscaleoffset",
       "offset" => 1000.5,
       "scale" => 100,
       "dtype" => "<f8",
       "astype" => "<u2"
     }, "<f8", "near1000"},
    {%{
       "id" => "fixedscaleoffset",
       "offset" => 0,
       "scale" => 3,
       "dtype" => "<f4",
       "astype" => "<i4"
     }, "<f4", "smooth"},
    {%{
       "id" => "fixedscaleoffset",
       "offset" => 5,
       "scale" => 2,
       "dtype" => "<i4",
       "astype" => "<i2"
     }, "<i4", "small"},
    {%{
       "id" => "fixedscaleoffset",
       "offset" => 1.5,
       "scale" => 0.3,
       "dtype" => "<f8",
       "astype" => "<f4"
     }, "<f8", "smooth"},
    {%{"id" => "fixedscaleoffset", "offset" => 0.25, "scale" => 4, "dtype" => "<f8"}, "<f8",
     "special"},
    {%{"id" => "quantize", "digits" => 1, "dtype" => "<f8"}, "<f8", "special"},
    {%{"id" => "quantize", "digits" => 3, "dtype" => "<f4"}, "<f4", "smooth"},
    {%{"id" => "quantize", "digits" => 2, "dtype" => "<f8", "astype" => "<f4"}, "<f8", "smooth"},
    {%{"id" => "quantize", "digits" => -1, "dtype" => "<f8"}, "<f8", "smooth"},
    {%{"id" => "quantize", "digits" => 2, "dtype" => "<f2"}, "<f2", "smooth"},
    {%{"id" => "bitround", "keepbits" => 3}, "<f4", "special"},
    {%{"id" => "bitround", "keepbits" => 10}, "<f8", "special"},
    {%{"id" => "bitround", "keepbits" => 0}, "<f8", "smooth"},
    {%{"id" => "bitround", "keepbits" => 5}, "<f2", "smooth"},
    {%{"id" => "bitround", "keepbits" => 23}, "<f4", "smooth"},
    {%{"id" => "astype", "encode_dtype" => "<f4", "decode_dtype" => "<f8"}, "<f8", "special"},
    {%{"id" => "astype", "encode_dtype" => "<i2", "decode_dtype" => "<f8"}, "<f8", "smooth"},
    {%{"id" => "astype", "encode_dtype" => "<f2", "decode_dtype" => "<i4"}, "<i4", "small"},
    {%{"id" => "astype", "encode_dtype" => "<f8", "decode_dtype" => "|u1"}, "|u1", "ints"},
    {%{"id" => "astype", "encode_dtype" => "<u4", "decode_dtype" => "<i8"}, "<i8", "ints"},
    {%{"id" => "astype", "encode_dtype" => "|b1", "decode_dtype" => "<f4"}, "<f4", "small"},
    {%{"id" => "astype", "encode_dtype" => "<i4", "decode_dtype" => "|b1"}, "|b1", "bools"},
    {%{"id" => "shuffle", "elementsize" => 4}, "<f4", "smooth"},
    {%{"id" => "shuffle", "elementsize" => 8}, "<f8", "smooth"},
    {%{"id" => "shuffle", "elementsize" => 1}, "<i2", "ints"},
    {%{"id" => "packbits"}, "|b1", "bools"}
  ]

  @generate """
  import json, os, sys
  import numpy as np, numcodecs
  d = sys.argv[1]
  rng = np.random.default_rng(7)
  n = int(sys.argv[2])
  for i, (config, dtype, gen) in enumerate(json.load(open(os.path.join(d, "cases.json")))):
      dt = np.dtype(dtype)
      t = np.arange(n)
      if gen == "smooth":
          x = np.sin(t / 37) * 100 + rng.normal(size=n)
      elif gen == "special":
          x = np.sin(t / 37) * 100 + rng.normal(size=n)
          x[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.5, 2.5]
      elif gen == "near1000":
          x = 1000.5 + rng.random(n) * 25
      elif gen == "walk":
          x = np.cumsum(rng.integers(-100, 100, n))
      elif gen == "small":
          x = rng.integers(-1000, 1000, n)
          x[:3] = 0
      elif gen == "bools":
          x = rng.integers(0, 2, n - 3)
      else:
          info = np.iinfo(dt)
          x = rng.integers(max(info.min, -2**40), min(info.max, 2**40), n, endpoint=True)
      x = x.astype(dt)
      codec = numcodecs.get_codec(dict(config))
      with np.errstate(all="ignore"):
          enc = np.asarray(codec.encode(x))
          dec = np.asarray(codec.decode(enc))
      for ext, a in (("in", x), ("enc", enc), ("dec", dec)):
          open(os.path.join(d, f"{i}.{ext}"), "wb").write(a.tobytes())
  """

  defp codec(v2_config, dtype, n) do
    {:ok, spec, _kind} = Registry.from_v2(v2_config)
    {:ok, module, config} = Registry.resolve(spec)
    chunk = %{shape: {n}, dtype: dtype, fill_value: 0, decoded_size: nil}
    {:ok, state} = module.init(config, chunk)
    {module, state, chunk}
  end

  @tag :tmp_dir
  test "encodes and decodes exactly as numcodecs", %{tmp_dir: dir} do
    cases = Enum.map(@cases, &Tuple.to_list/1)
    File.write!(Path.join(dir, "cases.json"), :jiffy.encode(cases))
    Python.run!(@generate, [dir, "#{@n}"])

    for {{config, numpy, _gen}, i} <- Enum.with_index(@cases) do
      read = &File.read!(Path.join(dir, "#{i}.#{&1}"))
      {:ok, dtype} = Numcodecs.parse_dtype(numpy)
      input = read.("in")
      n = div(byte_size(input), Numcodecs.itemsize(dtype))
      {module, state, _} = codec(config, dtype, n)
      {:ok, encoded} = module.encode(input, state)
      assert IO.iodata_to_binary(encoded) == read.("enc"), "encode #{inspect(config)}"

      assert module.decode(read.("enc"), state) == {:ok, read.("dec")},
             "decode #{inspect(config)}"
    end
  end

  test "resolve_spec follows the encoded dtype and shape" do
    {m, s, chunk} = codec(%{"id" => "delta", "dtype" => "<i8", "astype" => "<i2"}, :int64, 10)
    assert m.resolve_spec(chunk, s).dtype == :int16

    {m, s, chunk} = codec(%{"id" => "packbits"}, :bool, 17)
    assert %{shape: {4}, dtype: :uint8} = m.resolve_spec(chunk, s)

    {m, s, chunk} = codec(%{"id" => "astype", "encode_dtype" => "<f4"}, :float64, 3)
    assert m.resolve_spec(chunk, s).dtype == :float32
    assert m.configuration(s) == %{"encode_dtype" => "<f4", "decode_dtype" => "<f8"}
  end

  test "invalid configurations and inputs give errors" do
    spec = fn dtype -> %{shape: {4}, dtype: dtype, fill_value: 0, decoded_size: nil} end

    for {module, config, dtype} <- [
          {ExZarr.Codecs.Delta, %{"dtype" => "<i4"}, :int16},
          {ExZarr.Codecs.Delta, %{"dtype" => "|b1"}, :bool},
          {ExZarr.Codecs.Delta, %{"dtype" => "<x9"}, :int32},
          {ExZarr.Codecs.FixedScaleOffset, %{"dtype" => "<f8", "scale" => 1}, :float64},
          {ExZarr.Codecs.FixedScaleOffset, %{"offset" => "a", "scale" => 1}, :float64},
          {ExZarr.Codecs.Quantize, %{"digits" => 2}, :int32},
          {ExZarr.Codecs.Quantize, %{"dtype" => "<f8"}, :float64},
          {ExZarr.Codecs.Bitround, %{"keepbits" => 24}, :float32},
          {ExZarr.Codecs.Bitround, %{"keepbits" => 3}, :int32},
          {ExZarr.Codecs.Astype, %{}, :float64},
          {ExZarr.Codecs.Packbits, %{}, :uint8},
          {ExZarr.Codecs.Shuffle, %{"elementsize" => -1}, :uint8}
        ] do
      assert {:error, _} = module.init(config, spec.(dtype)), inspect({module, config})
    end

    {m, s, _} = codec(%{"id" => "packbits"}, :bool, 10)
    assert {:error, {:packbits, _}} = m.decode(<<9, 0, 0>>, s)
    assert {:error, {:packbits, _}} = m.decode(<<6, 0>>, s)
    assert {:error, {:packbits, _}} = m.decode("", s)
    assert {:ok, <<0::80>>} = m.decode(<<6, 0, 0>>, s)

    {m, s, _} = codec(%{"id" => "shuffle", "elementsize" => 4}, :float32, 2)
    assert {:error, {:shuffle, _}} = m.decode("abcde", s)

    {m, s, _} = codec(%{"id" => "delta", "dtype" => "<i4"}, :int32, 2)
    assert {:error, {:delta, _}} = m.decode("abcde", s)
  end

  test "large chunks (dirty schedulers) round-trip" do
    data = for i <- 1..300_000, into: <<>>, do: <<i * 3::32-little>>
    {m, s, _} = codec(%{"id" => "delta", "dtype" => "<u4", "astype" => "|u1"}, :uint32, 300_000)
    {:ok, enc} = m.encode(data, s)
    assert byte_size(enc) == 300_000
    assert m.decode(enc, s) == {:ok, data}

    {m, s, _} = codec(%{"id" => "shuffle", "elementsize" => 4}, :uint32, 300_000)
    {:ok, enc} = m.encode(data, s)
    assert m.decode(enc, s) == {:ok, data}
  end
end
