defmodule ExZarr.Result do
  @moduledoc false
  # Helpers for results (`{:ok, value}` / `:ok` or `{:error, reason}`): walking lists with
  # functions that return them, stopping at the first error, and unwrapping one for the `!`
  # functions (the one place where an error becomes an `ExZarr.Error`).

  @doc """
  Maps `fun` over `list` (any enumerable); `{:ok, values}` in order, or the first error
  returned; `{:error, {:not_a_list, list}}` for an improper list.

      iex> ExZarr.Result.map_ok([1, 2], &{:ok, &1 * 2})
      {:ok, [2, 4]}
      iex> ExZarr.Result.map_ok([1, 2], fn _ -> {:error, :nope} end)
      {:error, :nope}
      iex> ExZarr.Result.map_ok([1 | 2], &{:ok, &1})
      {:error, {:not_a_list, [1 | 2]}}
  """
  @spec map_ok(Enumerable.t(), (term() -> {:ok, term()} | term())) :: {:ok, list()} | term()
  def map_ok(list, fun) do
    if is_list(list) and List.improper?(list),
      do: {:error, {:not_a_list, list}},
      else: map_proper(list, fun)
  end

  defp map_proper(list, fun) do
    Enum.reduce_while(list, {:ok, []}, fn item, {:ok, acc} ->
      case fun.(item) do
        {:ok, value} -> {:cont, {:ok, [value | acc]}}
        error -> {:halt, error}
      end
    end)
    |> case do
      {:ok, acc} -> {:ok, Enum.reverse(acc)}
      error -> error
    end
  end

  @doc """
  Calls `fun` on each item while it returns `:ok`; `:ok` or the first error returned.

      iex> ExZarr.Result.each_ok([1, 2], fn _ -> :ok end)
      :ok
  """
  @spec each_ok(Enumerable.t(), (term() -> :ok | term())) :: :ok | term()
  def each_ok(items, fun), do: Enum.find_value(items, :ok, &with(:ok <- fun.(&1), do: nil))

  @doc """
  The value of `{:ok, value}` (`:ok` for `:ok`); raises `ExZarr.Error` for `{:error, reason}`.
  Every `!` function of ExZarr unwraps its result here.

      iex> ExZarr.Result.unwrap!({:ok, 1})
      1
      iex> ExZarr.Result.unwrap!({:error, :nope})
      ** (ExZarr.Error) ExZarr error: :nope
  """
  @spec unwrap!({:ok, value} | :ok | {:error, term()}) :: value | :ok when value: term()
  def unwrap!({:ok, value}), do: value
  def unwrap!(:ok), do: :ok
  def unwrap!({:error, reason}), do: raise(ExZarr.Error, reason: reason)
end
