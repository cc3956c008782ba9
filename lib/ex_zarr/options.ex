defmodule ExZarr.Options do
  @moduledoc """
  Checks the options of a public call. Every public function declares the keys it takes; an
  option it does not take is an error naming it, never silently ignored:

      iex> ExZarr.Options.check([start: {0}, chnks: {4}], [:start, :stop])
      {:error, {:unknown_option, :chnks}}
      iex> ExZarr.Options.check(%{start: {0}}, [:start])
      {:error, {:invalid_options, %{start: {0}}}}
      iex> ExZarr.Options.check([timeout: -5], [:timeout])
      {:error, {:invalid_option, :timeout, -5}}
      iex> ExZarr.Options.check([path: "/tmp/a.zarr"], [:start], [:path])
      :ok
      iex> ExZarr.Options.check([timeout: 5, timeout: 10], [:timeout])
      {:error, {:duplicate_option, :timeout}}

  The values of the options shared by many functions are checked here too: `max_concurrency`
  and `parallel` (positive integers), `timeout` (ms or `:infinity`), `coalesce_gap` (bytes),
  `ordered`, `overwrite`, `recursive`, `write_empty_chunks`, `single_writer` (booleans), `use_consolidated`
  (boolean or `nil`), `zarr_format` (2, 3 or `nil`), `level` (`:chunk` or `:inner`), `prefix`
  (a string). The others (metadata, codecs, selections) are checked by the layer that reads
  them. Options passed on unread to another layer (`passed_on`: the storage backend's) are
  only allowed here: that layer checks their values.
  """

  # The longest finite timeout Erlang timers accept everywhere (ms, about 49 days).
  @max_timeout 4_294_967_295

  @doc """
  `:ok` when `opts` is a keyword list whose keys are all in `allowed` or `passed_on` and whose
  shared options have valid values; else `{:error, {:invalid_options, opts}}` (not a keyword
  list), `{:error, {:duplicate_option, key}}`, `{:error, {:unknown_option, key}}` or
  `{:error, {:invalid_option, key, value}}`.
  """
  @spec check(term(), [atom()], [atom()]) :: :ok | {:error, term()}
  def check(opts, allowed, passed_on \\ [])

  def check(opts, allowed, passed_on) do
    with :ok <- check_keyword(opts) do
      case Enum.find(opts, fn {key, _} -> key not in allowed and key not in passed_on end) do
        nil -> check_values(opts, allowed)
        {key, _} -> {:error, {:unknown_option, key}}
      end
    end
  end

  @doc """
  `:ok` when `opts` is a keyword list giving each key once, else
  `{:error, {:invalid_options, opts}}` or `{:error, {:duplicate_option, key}}` (which of the
  values was meant is unknown: no function would read the same one).
  """
  @spec check_keyword(term()) ::
          :ok | {:error, {:invalid_options, term()} | {:duplicate_option, atom()}}
  def check_keyword(opts) do
    if Keyword.keyword?(opts),
      do: check_unique(Keyword.keys(opts), %{}),
      else: {:error, {:invalid_options, opts}}
  end

  defp check_unique([], _seen), do: :ok

  defp check_unique([key | _], seen) when is_map_key(seen, key),
    do: {:error, {:duplicate_option, key}}

  defp check_unique([key | rest], seen), do: check_unique(rest, Map.put(seen, key, true))

  defp check_values(opts, allowed) do
    case Enum.find(opts, fn {key, value} -> key in allowed and not value_ok?(key, value) end) do
      nil -> :ok
      {key, value} -> {:error, {:invalid_option, key, value}}
    end
  end

  defp value_ok?(key, n) when key in [:max_concurrency, :parallel], do: is_integer(n) and n > 0
  defp value_ok?(:timeout, t), do: t == :infinity or (is_integer(t) and t in 0..@max_timeout)
  defp value_ok?(:coalesce_gap, n), do: is_integer(n) and n >= 0

  defp value_ok?(key, b)
       when key in [:ordered, :overwrite, :recursive, :write_empty_chunks, :single_writer],
       do: is_boolean(b)

  defp value_ok?(:use_consolidated, v), do: v in [nil, true, false]
  defp value_ok?(:zarr_format, v), do: v in [nil, 2, 3]
  defp value_ok?(:level, v), do: v in [:chunk, :inner]
  defp value_ok?(:prefix, v), do: is_binary(v)
  defp value_ok?(_key, _value), do: true
end
